package io.sparkps.ml.param;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.EvalSpec;
import io.sparkps.ml.Experiment;
import io.sparkps.ml.FashionMnistTestSet;
import io.sparkps.ml.TrainSpec;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.ClusterSpec;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * One training configuration, every surface mapped onto it in one place: the estimator's Params
 * both ways, an Experiment's specs, and (in {@code TrainFlagsTest}) the command line. Each check
 * compares every field of the configuration, found by reflection, so an option added to
 * {@link TrainingConfig} and missed by a surface fails here.
 */
public class TrainingConfigTest {
  /** A configuration in which every option differs from its default. */
  public static TrainingConfig everyOptionSet() {
    return TrainingConfig.builder().optFeaturesCol("x").optLabelCol("y").optNumWorkers(3).optNumPs(2).optBatchSize(17)
        .optEpochs(4).optMaxSteps(99).optConsistency(Consistency.SSP).optStaleness(5).optStalenessAwareRate(true)
        .optSeed(11).optCheckpointDir("hdfs:///runs/a/ckpt").optCheckpointInterval(7).optCheckpointsKept(2)
        .optGradientAccumulation(1).optBf16Transfers(false).optSparseDensity(0.25).optEvalEverySeconds(0.5)
        .optEvalDeferred(true).build();
  }

  /** The same but dense, with gradient accumulation and bf16, which do not go with sparse transfers. */
  public static TrainingConfig accumulating() {
    return everyOptionSet().toBuilder().optSparseDensity(0).optGradientAccumulation(3).optBf16Transfers(true).build();
  }

  /**
   * An embedding model's options, each off its default (columns alike in all but their names, as
   * the command line's flags give them): dense and without sparse transfers, which tables do not take.
   */
  public static TrainingConfig embedding() {
    java.util.List<EmbeddingColumn> columns = java.util.stream.Stream.of("C1", "C2").map(c -> EmbeddingColumn.of(c, 4)
        .withOptimizer("ADAGRAD", 0.2).withBuckets(1000).withMinCount(3)).toList();
    return everyOptionSet().toBuilder().optSparseDensity(0).optEmbeddingColumns(columns, "I1", "I2")
        .optFactorizationTerm(true).optWidePart(true).optAsyncTables(true).optNumericTransform(NumericTransform.LOG1P)
        .build();
  }

  /** The names of the fields whose values differ between {@code a} and {@code b}. */
  public static List<String> differences(TrainingConfig a, TrainingConfig b) {
    List<String> out = new ArrayList<>();
    for (Field f : TrainingConfig.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers())) {
        continue;
      }
      f.setAccessible(true);
      try {
        if (!java.util.Objects.equals(f.get(a), f.get(b))) {
          out.add(f.getName());
        }
      } catch (IllegalAccessException e) {
        throw new AssertionError(e);
      }
    }
    return out;
  }

  /** The fields that differ from the defaults in neither fixture: they would go unchecked. */
  @Test
  void theFixtures_setEveryOption() {
    List<String> unset = new ArrayList<>(fieldNames());
    unset.removeAll(differences(everyOptionSet(), TrainingConfig.defaults()));
    unset.removeAll(differences(accumulating(), TrainingConfig.defaults()));
    unset.removeAll(differences(embedding(), TrainingConfig.defaults()));
    assertEquals(List.of(), unset, "options at their default in both fixtures");
  }

  @Test
  void theEstimatorsParams_holdEveryOption_bothWays() {
    for (TrainingConfig c : List.of(everyOptionSet(), accumulating(), embedding(), TrainingConfig.defaults())) {
      Dl4jEstimator e = new Dl4jEstimator().setConfig(c);
      assertEquals(List.of(), differences(c, e.getConfig()), c.toString());
      assertEquals(c, e.getConfig());
    }
    assertEquals(List.of(), differences(TrainingConfig.defaults(), new Dl4jEstimator().getConfig()),
        "the Params' defaults are the config's");
    // A config without checkpoints clears a directory set before.
    Dl4jEstimator e = new Dl4jEstimator().setCheckpointDir("/somewhere").setConfig(TrainingConfig.defaults());
    assertEquals(null, e.getConfig().checkpointDir());
  }

  @Test
  void anExperiment_passesEveryOption_toItsEstimator() {
    for (TrainingConfig c : List.of(everyOptionSet(), accumulating(), embedding())) {
      Experiment x = Experiment.builder().setNetworkJson(FashionMnistTestSet.mlp())
          .setTrainSpec(TrainSpec.builder().optConfig(c).build())
          .optEvalSpec(EvalSpec.builder().optThrottleSeconds(c.evalEverySeconds()).optDeferred(c.evalDeferred()).build())
          .build();
      assertEquals(List.of(), differences(c, x.estimator().getConfig()), c.toString());
      assertEquals(c.numWorkers(), x.numWorkers(), "the cluster defaults to the config's");
    }
    // The experiment's cluster and eval spec win over the config's.
    Experiment x = Experiment.builder().setNetworkJson(FashionMnistTestSet.mlp())
        .setTrainSpec(TrainSpec.builder().optConfig(everyOptionSet()).build()).optCluster(5, 4).build();
    TrainingConfig got = x.estimator().getConfig();
    assertEquals(List.of(5, 4), List.of(got.numWorkers(), got.numPs()));
    // The spec's own methods reach the options the CLI and estimator have.
    TrainSpec spec = TrainSpec.builder().optStalenessAwareRate(true).optConsistency(Consistency.ASYNC, 0)
        .optSparseTransfers(0.1).build();
    assertTrue(spec.config().stalenessAwareRate() && spec.config().sparseDensity() == 0.1, spec.config().toString());
    assertTrue(spec.toString().contains("sparseDensity=0.1") && spec.toString().contains("stalenessAwareRate=true"),
        spec.toString());
    assertTrue(TrainSpec.builder().optBf16Transfers(true).build().config().bf16Transfers());
    assertEquals(List.of(), differences(spec.config(), spec.toBuilder().build().config()));
  }

  @Test
  void optionsThatDoNotGoTogether_areRefusedByName() {
    IllegalArgumentException sync = assertThrows(IllegalArgumentException.class,
        () -> TrainingConfig.builder().optSparseDensity(0.1).build());
    assertTrue(sync.getMessage().startsWith("sparseDensity 0.1 needs consistency ASYNC or SSP"), sync.getMessage());
    IllegalArgumentException accumulation = assertThrows(IllegalArgumentException.class, () -> TrainingConfig.builder()
        .optConsistency(Consistency.ASYNC).optSparseDensity(0.1).optGradientAccumulation(2).build());
    assertTrue(accumulation.getMessage().startsWith("gradientAccumulation 2 does not go with sparse transfers"),
        accumulation.getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainingConfig.builder()
        .optConsistency(Consistency.ASYNC).optSparseDensity(0.1).optBf16Transfers(true).build()).getMessage()
        .startsWith("bf16Transfers and sparseTransfers are exclusive"));
    assertEquals("sparseDensity is 1.5; it must be in [0, 1] (0: dense)", assertThrows(IllegalArgumentException.class,
        () -> TrainingConfig.builder().optSparseDensity(1.5)).getMessage());
    assertEquals("maxSteps is -1; it must be >= 1, or 0 to run epochs", assertThrows(IllegalArgumentException.class,
        () -> TrainingConfig.builder().optMaxSteps(-1)).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainingConfig.builder().optEvalEverySeconds(0))
        .getMessage().startsWith("evalEverySeconds is 0.0"));
  }

  @Test
  void theClusterSpec_comesFromTheConfig_andAnotherIsRefused() {
    TrainingConfig c = everyOptionSet();
    ClusterSpec spec = c.clusterSpec().build();
    assertEquals(List.of(3, 2), List.of(spec.numWorkers(), spec.numPs()));
    assertTrue(!spec.bf16Transfers() && spec.sparseDensity() == 0.25);
    c.checkCluster(spec);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> c.checkCluster(c.clusterSpec().setNumPs(1).build()));
    assertTrue(e.getMessage().contains("disagrees with the training config") && e.getMessage().contains("1 ps"),
        e.getMessage());
    assertNotEquals(c, TrainingConfig.defaults());
  }

  /** The rows of docs/configuration.md's options table, one per option. */
  public static List<String> docsTableRows() throws java.io.IOException {
    // Tests run in the module's directory, below the project's.
    java.nio.file.Path docs = java.nio.file.Path.of("").toAbsolutePath().getParent().resolve("docs/configuration.md");
    String text = java.nio.file.Files.readString(docs);
    String table = text.substring(text.indexOf("<!-- options:begin -->"), text.indexOf("<!-- options:end -->"));
    return table.lines().filter(l -> l.startsWith("| `")).toList();
  }

  @Test
  void theDocsTable_listsEveryOption() throws java.io.IOException {
    List<String> rows = docsTableRows().stream().map(l -> l.substring(3, l.indexOf('`', 3))).toList();
    assertEquals(fieldNames(), rows, "the options table of docs/configuration.md, in the config's order");
  }

  @Test
  void everyOption_isDeclaredOnce_inTheConfigsOrder_andItsParamIsMadeFromTheDeclaration() {
    List<String> declared = new ArrayList<>(TrainingOptions.ALL.stream().map(TrainingOption::name).toList());
    declared.add(fieldNames().indexOf("checkpointDir"), "checkpointDir"); // mapped by the estimator itself
    assertEquals(fieldNames(), declared, "TrainingOptions.ALL, in the config's order");
    // equals and hashCode compare toString: it must show every option.
    String shown = embedding().toString();
    for (String field : fieldNames()) {
      assertTrue(shown.contains(", " + field + "=") || shown.startsWith("TrainingConfig{" + field + "="), field + ": " + shown);
    }
    assertNotEquals(embedding(), embedding().toBuilder().optWidePart(false).build());
    assertEquals(embedding(), embedding().toBuilder().build());
    Dl4jEstimator e = new Dl4jEstimator();
    for (TrainingOption<?> o : TrainingOptions.ALL) {
      org.apache.spark.ml.param.Param<?> p = e.getParam(o.name());
      assertEquals(o.doc(), p.doc(), o.name());
      Object expected = o.paramValue(TrainingConfig.defaults());
      Object fallback = e.getDefault(p).get();
      assertTrue(java.util.Objects.deepEquals(expected, fallback), o.name() + ": the default " + fallback + ", not "
          + expected);
    }
  }

  @Test
  void aParam_refusesWhatItsBuilderMethodRefuses() {
    Dl4jEstimator e = new Dl4jEstimator();
    for (Runnable bad : List.<Runnable>of(() -> e.setNumWorkers(0), () -> e.setStaleness(-1),
        () -> e.set(e.maxSteps(), -1L), () -> e.set(e.sparseDensity(), 1.5), () -> e.set(e.evalEverySeconds(), 0.0),
        () -> e.set(e.consistency(), "EVENTUAL"), () -> e.set(e.gradientAccumulation(), 0))) {
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, bad::run);
      assertTrue(refused.getMessage().contains("given invalid value"), refused.getMessage());
    }
    // What the builder takes, the Param takes.
    e.setNumWorkers(1).setStaleness(0).set(e.maxSteps(), 0L);
    e.set(e.consistency(), "SSP");
    assertEquals(List.of(1, 0, 0L, Consistency.SSP), List.of(e.getConfig().numWorkers(), e.getConfig().staleness(),
        e.getConfig().maxSteps(), e.getConfig().consistency()));
    // The embedding columns' JSON is refused when the config is made, its message naming the field at fault.
    e.set(e.embeddingColumns(), "[{\"column\": \"C1\", \"dim\": 4, \"pooling\": \"MAX\"}]");
    assertTrue(assertThrows(IllegalArgumentException.class, e::getConfig).getMessage()
        .contains("pooling must be SUM or MEAN, got 'MAX'"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EmbeddingColumn.fromJson("[{\"dim\": 4}]"))
        .getMessage().contains("names no column: give each a \"column\" field"));
    assertEquals("consistency is 'EVENTUAL'; it must be one of [ASYNC, SYNC, SSP]", assertThrows(
        IllegalArgumentException.class, () -> TrainingOptions.named("consistency").setParamValue(TrainingConfig.builder(),
            "EVENTUAL")).getMessage());
  }

  private static List<String> fieldNames() {
    List<String> out = new ArrayList<>();
    for (Field f : TrainingConfig.class.getDeclaredFields()) {
      if (!Modifier.isStatic(f.getModifiers())) {
        out.add(f.getName());
      }
    }
    return out;
  }
}
