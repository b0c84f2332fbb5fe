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
}
