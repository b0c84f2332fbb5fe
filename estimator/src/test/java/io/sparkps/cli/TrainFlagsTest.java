package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.param.TrainingConfigTest;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code sparkps train}'s flags reach every option of the training configuration, and a bad one names its flag. */
class TrainFlagsTest {
  private static TrainingConfig parse(String... args) {
    TrainCommand train = new TrainCommand();
    new CommandLine(train).parseArgs(args);
    return train.config();
  }

  /** The flags that give {@code c} (all but the data, network and output, which are not training options). */
  private static String[] flags(TrainingConfig c) {
    List<String> out = new java.util.ArrayList<>(List.of("--data", "d.csv", "--features", c.featuresCol(), "--label",
        c.labelCol(), "--workers", "" + c.numWorkers(), "--ps", "" + c.numPs(), "--batch-size", "" + c.batchSize(),
        "--epochs", "" + c.epochs(), "--steps", "" + c.maxSteps(), "--consistency", c.consistency().name(),
        "--staleness", "" + c.staleness(), "--seed", "" + c.seed(), "--checkpoint-dir", c.checkpointDir(),
        "--checkpoint-interval", "" + c.checkpointInterval(), "--checkpoints-kept", "" + c.checkpointsKept(),
        "--gradient-accumulation", "" + c.gradientAccumulation(), "--sparse-density", "" + c.sparseDensity(),
        "--eval-every", "" + c.evalEverySeconds()));
    if (c.stalenessAwareRate()) {
      out.add("--staleness-aware-rate");
    }
    if (c.asyncTables()) {
      out.add("--async-tables");
    }
    if (c.bf16Transfers()) {
      out.add("--bf16");
    }
    if (c.evalDeferred()) {
      out.add("--eval-deferred");
    }
    if (c.hasEmbeddings()) {
      io.sparkps.ml.param.EmbeddingColumn first = c.embeddingColumns().get(0);
      out.addAll(List.of("--categorical-cols", String.join(",", c.embeddingColumns().stream()
          .map(io.sparkps.ml.param.EmbeddingColumn::column).toList()), "--embedding-dim", "" + first.dim(),
          "--embedding-optimizer", first.optimizer().name(), "--embedding-learning-rate", "" + first.learningRate(),
          "--embedding-buckets", "" + first.buckets(), "--embedding-min-count", "" + first.minCount()));
      if (!c.numericCols().isEmpty()) {
        out.addAll(List.of("--numeric-cols", String.join(",", c.numericCols())));
      }
      out.addAll(List.of("--numeric-transform", c.numericTransform().name()));
    }
    if (c.factorizationTerm()) {
      out.add("--factorization-term");
    }
    if (c.widePart()) {
      out.add("--wide");
    }
    return out.toArray(String[]::new);
  }

  @Test
  void everyOption_hasAFlag() {
    for (TrainingConfig c : List.of(TrainingConfigTest.everyOptionSet(), TrainingConfigTest.accumulating(),
        TrainingConfigTest.embedding())) {
      assertEquals(List.of(), TrainingConfigTest.differences(c, parse(flags(c))), c.toString());
    }
    assertEquals(List.of(), TrainingConfigTest.differences(TrainingConfig.defaults(), parse("--data", "d.csv")),
        "the flags' defaults are the config's");
  }

  @Test
  void aBadValue_namesItsFlag() {
    UsageException density = assertThrows(UsageException.class,
        () -> parse("--data", "d", "--consistency", "ASYNC", "--sparse-density", "1.5"));
    assertEquals("--sparse-density 1.5: sparseDensity is 1.5; it must be in [0, 1] (0: dense)", density.getMessage());
    UsageException workers = assertThrows(UsageException.class, () -> parse("--data", "d", "--workers", "0"));
    assertEquals("--workers 0: numWorkers is 0; it must be >= 1", workers.getMessage());
    UsageException sync = assertThrows(UsageException.class, () -> parse("--data", "d", "--sparse-density", "0.1"));
    assertTrue(sync.getMessage().startsWith("--sparse-density 0.1 needs consistency ASYNC or SSP")
        && sync.getMessage().contains("set --consistency to ASYNC or SSP, or --sparse-density to 0"), sync.getMessage());
  }

  /**
   * The options table of docs/configuration.md names, for every option, an estimator setter, a
   * flag and an Experiment method that exist, and its default as the config's.
   */
  @Test
  void theDocsTable_namesSettersFlagsAndSpecMethodsThatExist_andTheConfigsDefaults() throws Exception {
    CommandLine.Model.CommandSpec flags = new CommandLine(new TrainCommand()).getCommandSpec();
    TrainingConfig defaults = TrainingConfig.defaults();
    int rows = 0;
    for (String row : TrainingConfigTest.docsTableRows()) {
      String[] cells = row.split("\\|");
      String option = ticked(cells[1]).get(0);
      String where = "docs/configuration.md, " + option + ": ";
      checkDefault(where, cells[2], defaults, option);
      for (String setter : ticked(cells[3])) {
        assertTrue(hasMethod(io.sparkps.ml.Dl4jEstimator.class, setter), where + "no Dl4jEstimator." + setter);
      }
      for (String flag : ticked(cells[4])) {
        assertTrue(flags.findOption(flag) != null, where + "no flag " + flag);
      }
      for (String method : ticked(cells[5])) {
        String[] cm = method.split("\\.");
        Class<?> builder = Class.forName("io.sparkps.ml." + cm[0] + "$Builder");
        assertTrue(hasMethod(builder, cm[1]), where + "no " + method);
      }
      rows++;
    }
    assertEquals(25, rows, "a row for each option");
  }

  private static List<String> ticked(String cell) {
    List<String> out = new java.util.ArrayList<>();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("`([^`]+)`").matcher(cell);
    while (m.find()) {
      out.add(m.group(1));
    }
    return out;
  }

  private static boolean hasMethod(Class<?> c, String name) {
    return java.util.Arrays.stream(c.getMethods()).anyMatch(m -> m.getName().equals(name));
  }

  /** The cell's first word (unticked) is the default: a number, a name, or [] / none for an empty list. */
  private static void checkDefault(String where, String cell, TrainingConfig defaults, String option) throws Exception {
    String first = cell.trim().split("[\\s(]")[0].replace("`", "");
    java.lang.reflect.Field f = TrainingConfig.class.getDeclaredField(option);
    f.setAccessible(true);
    Object value = f.get(defaults);
    if (value == null) {
      assertEquals("automatic", first, where + "no value by default");
    } else if (value instanceof Number n) {
      assertEquals(n.doubleValue(), Double.parseDouble(first), 0, where + "the default");
    } else if (value instanceof List<?> list) {
      assertTrue(list.isEmpty() && (first.equals("[]") || first.equals("none")), where + "the default " + list);
    } else {
      assertEquals(String.valueOf(value), first, where + "the default");
    }
  }
}
