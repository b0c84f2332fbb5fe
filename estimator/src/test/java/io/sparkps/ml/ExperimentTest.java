package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.TaskProgress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/** Experiments (network + TrainSpec + EvalSpec) and checkpoints that a later run resumes from. */
class ExperimentTest {
  private static SparkSession spark;

  @TempDir
  static Path data;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(6, "experiment");
    Random random = new Random(8);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      int cls = i % 2;
      rows.add(RowFactory.create((cls == 0 ? -1.5 : 1.5) + random.nextGaussian() * 0.7, random.nextGaussian(),
          (double) cls));
    }
    Dataset<Row> frame = spark.createDataFrame(rows, new StructType().add("x", DataTypes.DoubleType)
        .add("y", DataTypes.DoubleType).add("label", DataTypes.DoubleType));
    Dataset<Row>[] split = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(frame).select("features", "label").randomSplit(new double[] {0.8, 0.2}, 1);
    split[0].write().parquet(data.resolve("train").toString());
    split[1].write().parquet(data.resolve("test").toString());
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static MultiLayerConfiguration network(int hidden) {
    return new NeuralNetConfiguration.Builder().seed(9).dataType(DataType.FLOAT).updater(new Adam(0.02)).list()
        .layer(new DenseLayer.Builder().nIn(2).nOut(hidden).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(hidden).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build();
  }

  private static double maxDiff(Dl4jModel a, Dl4jModel b) {
    return a.network().params().sub(b.network().params()).amaxNumber().doubleValue();
  }

  private static InputFn parquet(String name) {
    String path = data.resolve(name).toString();
    return s -> s.read().parquet(path);
  }

  @Test
  void experiment_readsItsInputs_trainsEvaluates_andRecordsItsSpecs() throws Exception {
    Experiment experiment = Experiment.builder().setNetwork(network(8))
        .setTrainSpec(TrainSpec.builder().optInput(parquet("train")).optBatchSize(16).optEpochs(4)
            .optConsistency(Consistency.ASYNC, 0).optSeed(3).build())
        .optEvalSpec(EvalSpec.builder().optInput(parquet("test")).optThrottleSeconds(0.05).optMaxRows(150).build())
        .optCluster(2, 2).build();
    // Shipped to a remote driver as a file; the lambdas' class is SparkPS's own here, so nothing beyond the allow-list.
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment, dir.resolve("staging"));
    assertEquals(List.of(), staged.extraClasses());
    Experiment shipped = ExperimentFiles.read(staged.file(), staged.sha256(), staged.extraClasses());
    Dl4jEstimator estimator = shipped.estimator();
    assertEquals(2, estimator.getOrDefault(estimator.numPs()));
    assertEquals("ASYNC", estimator.getOrDefault(estimator.consistency()));
    assertEquals(0.05, (Double) estimator.getOrDefault(estimator.evalEverySeconds()));

    Dl4jModel model = shipped.fit(spark);
    List<TaskProgress> evaluations = model.summary().evaluatorHistory();
    assertTrue(!evaluations.isEmpty() && evaluations.get(evaluations.size() - 1).examples() <= 150,
        "at most maxRows rows are scored: " + evaluations);
    assertTrue(model.summary().lastEvaluation().get("accuracy") > 0.85, model.summary().lastEvaluation().toString());
    assertTrue(model.provenance().get("experiment.train").contains("batchSize=16"), model.provenance().toString());
    assertTrue(model.provenance().get("experiment.eval").contains("maxRows=150"));
    assertEquals("2 workers, 2 ps", model.provenance().get("experiment.cluster"));
  }

  @Test
  void specs_refuseBadValues_namingThem() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainSpec.builder().optBatchSize(0)).getMessage()
        .contains("batchSize is 0"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TrainSpec.builder().optGradientAccumulation(0))
        .getMessage().contains("gradientAccumulation is 0"));
    TrainSpec accumulating = TrainSpec.builder().optGradientAccumulation(3).build();
    Dl4jEstimator mapped = Experiment.builder().setNetwork(network(4)).setTrainSpec(accumulating).build().estimator();
    assertEquals(3, mapped.getOrDefault(mapped.gradientAccumulation()));
    assertTrue(accumulating.toString().contains("gradientAccumulation=3"), accumulating.toString());
    assertEquals(1, TrainSpec.builder().build().gradientAccumulation());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EvalSpec.builder().optThrottleSeconds(0))
        .getMessage().contains("throttleSeconds is 0.0"));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> Experiment.builder().setNetwork(network(4)).build()).getMessage().contains("no TrainSpec"));
    IllegalArgumentException noInput = assertThrows(IllegalArgumentException.class, () -> Experiment.builder()
        .setNetwork(network(4)).setTrainSpec(TrainSpec.builder().build()).build().fitAsync(spark));
    assertTrue(noInput.getMessage().contains("the TrainSpec has no input"), noInput.getMessage());
  }

  @Test
  void aRunCancelledMidway_resumesFromItsLastIntervalCheckpoint_asIfUninterrupted() throws Exception {
    Path root = dir.resolve("interval");
    Dataset<Row> train = spark.read().parquet(data.resolve("train").toString());
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16)
        .setMaxSteps(1_000_000).setCheckpointDir(root.toUri().toString()).setCheckpointInterval(4);
    FitJob job = estimator.fitAsync(train);
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (!Files.exists(root.resolve("ckpt-0000000004").resolve(Checkpoints.MARKER)) && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    job.cancel(); // never reaches its end-of-run checkpoint: only interval ones are there
    assertThrows(Exception.class, () -> job.get(java.time.Duration.ofMinutes(2)));
    long last;
    try (var ckpts = Files.list(root)) {
      last = ckpts.filter(c -> Files.exists(c.resolve(Checkpoints.MARKER)))
          .mapToLong(c -> Long.parseLong(c.getFileName().toString().substring(5))).max().orElseThrow();
    }
    assertTrue(last >= 4 && last % 4 == 0, "an interval checkpoint: " + last);

    Dl4jModel resumed = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setMaxSteps(last + 6).fit(train);
    Dl4jModel straight = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16)
        .setMaxSteps(last + 6).fit(train);
    assertTrue(maxDiff(resumed, straight) < 1e-5, "resumed at " + last + " vs straight: " + maxDiff(resumed, straight));
    // (A run that skipped the restore would train the same steps from scratch, and match as well.)
    assertTrue(resumed.summary().workerHistory().stream().anyMatch(p -> String.valueOf(p.message())
        .startsWith("resumed from the checkpoint of step " + last + " in ")), "the chief said it resumed at " + last
        + ": " + resumed.summary().workerHistory());
  }

  @Test
  void aCheckpointThatCannotBeWritten_isSkippedWithItsStep_andTrainingGoesOn() throws Exception {
    Files.writeString(dir.resolve("a-file"), "not a directory");
    String unwritable = dir.resolve("a-file").resolve("ckpt").toUri().toString();
    Dataset<Row> train = spark.read().parquet(data.resolve("train").toString());
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(6)
        .setCheckpointDir(unwritable).setCheckpointInterval(4).fit(train);
    Dl4jModel straight = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(6)
        .fit(train);
    assertEquals(0, maxDiff(model, straight), 1e-6, "the run trained on as if it had no checkpoints");
    List<String> messages = model.summary().workerHistory().stream().map(TaskProgress::message).distinct().toList();
    assertTrue(messages.stream().anyMatch(m -> m.startsWith("the checkpoint of step ") && m.contains(" in " + unwritable
        + " was skipped after 3 attempts (") && m.contains("training goes on")), messages.toString());
  }

  @Test
  void checkpoints_onlyCkptStepDirectoriesAreSparkPs_anUnreadableMarkerIsSkipped() throws Exception {
    Path root = dir.resolve("ckpt");
    String checkpoints = root.toUri().toString();
    Dataset<Row> train = spark.read().parquet(data.resolve("train").toString());
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(4)
        .setCheckpointDir(checkpoints).setCheckpointInterval(4).setCheckpointsKept(1);
    estimator.fit(train);
    Files.createDirectories(root.resolve("ckpt-old"));
    Files.createDirectories(root.resolve("ckpt-keep"));
    Files.copy(root.resolve("ckpt-0000000004").resolve(Checkpoints.MARKER), root.resolve("ckpt-keep")
        .resolve(Checkpoints.MARKER));
    Files.createDirectories(root.resolve("ckpt-0000000099"));
    Files.writeString(root.resolve("ckpt-0000000099").resolve(Checkpoints.MARKER), "step=ninety-nine\n");

    Dl4jModel resumed = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setMaxSteps(6).fit(train);
    List<String> messages = resumed.summary().workerHistory().stream().map(TaskProgress::message).toList();
    assertTrue(messages.stream().anyMatch(m -> m.startsWith("resumed from the checkpoint of step 4 in ")
        && m.contains("newer ones were damaged: [ckpt-0000000099: cannot read the checkpoint marker")), messages
        .toString());
    assertTrue(Files.exists(root.resolve("ckpt-0000000006").resolve(Checkpoints.MARKER)), "saved, pruning went well");
    assertTrue(Files.notExists(root.resolve("ckpt-0000000004")), "pruned: one kept");
    assertTrue(Files.isDirectory(root.resolve("ckpt-old")) && Files.exists(root.resolve("ckpt-keep")
        .resolve(Checkpoints.MARKER)), "a user's ckpt-old and ckpt-keep are not SparkPS's to prune");
  }

  @Test
  void checkpoints_letALaterRunResumeWhereTheLastStopped() throws Exception {
    String checkpoints = dir.resolve("ckpt").toUri().toString();
    Dataset<Row> train = spark.read().parquet(data.resolve("train").toString());
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(6)
        .setCheckpointDir(checkpoints).setCheckpointInterval(4);
    estimator.fit(train);
    Properties marker = new Properties();
    try (var in = Files.newInputStream(dir.resolve("ckpt").resolve("ckpt-0000000006").resolve(Checkpoints.MARKER))) {
      marker.load(in);
    }
    assertEquals("6", marker.getProperty("step"));
    assertTrue(Files.exists(dir.resolve("ckpt").resolve("ckpt-0000000006").resolve("ps-00000.snapshot")));
    assertTrue(Files.exists(dir.resolve("ckpt").resolve("ckpt-0000000004").resolve(Checkpoints.MARKER)), "kept");

    // Resumed with nothing left to do, another shuffle seed changes nothing: the run restored step 6.
    Dl4jModel model6 = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setCheckpointDir(dir.resolve("none")
        .toUri().toString()).fit(train);
    Dl4jModel resumed6 = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setSeed(99).fit(train);
    assertEquals(0, maxDiff(model6, resumed6), "the restored parameters, untouched");
    // Resumed mid-epoch to step 10: the same parameters as 10 steps in one run (batches, optimizer state, steps).
    Dl4jModel resumed10 = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setMaxSteps(10).fit(train);
    Dl4jModel straight10 = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(10)
        .fit(train);
    assertTrue(maxDiff(resumed10, straight10) < 1e-4, "resumed vs straight: " + maxDiff(resumed10, straight10));
    assertTrue(maxDiff(resumed10, model6) > 1e-3, "the resumed run trained on");

    IllegalArgumentException other = assertThrows(IllegalArgumentException.class, () -> new Dl4jEstimator()
        .setNetworkJson(network(5).toJson()).setMaxSteps(3).setCheckpointDir(checkpoints).fit(train));
    assertTrue(other.getMessage().contains("holds other variables"), other.getMessage());
    IllegalArgumentException shards = assertThrows(IllegalArgumentException.class, () -> estimator
        .copy(new org.apache.spark.ml.param.ParamMap()).setNumPs(2).fit(train));
    assertTrue(shards.getMessage().contains("was saved with 1 ps but this run has 2"), shards.getMessage());
  }

  @Test
  void withGradientAccumulation_checkpointsFallOnStepBoundaries_andAResumedRunMatchesAStraightOne() throws Exception {
    Path root = dir.resolve("accumulated");
    Dataset<Row> train = spark.read().parquet(data.resolve("train").toString());
    // 3 minibatches per step, a checkpoint every 4: at minibatch 6 (the first step boundary after 4), and at the end (9).
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(9)
        .setGradientAccumulation(3).setCheckpointDir(root.toUri().toString()).setCheckpointInterval(4);
    estimator.fit(train);
    try (var ckpts = Files.list(root)) {
      assertEquals(List.of("ckpt-0000000006", "ckpt-0000000009"), ckpts.map(c -> c.getFileName().toString())
          .filter(n -> n.startsWith("ckpt-")).sorted().toList());
    }
    // Resumed at minibatch 9 (its 3 steps restored) and on to 15: the same as 5 steps in one run.
    Dl4jModel resumed = estimator.copy(new org.apache.spark.ml.param.ParamMap()).setMaxSteps(15).fit(train);
    Dl4jModel straight = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(15)
        .setGradientAccumulation(3).fit(train);
    assertTrue(maxDiff(resumed, straight) < 1e-4, "resumed vs straight: " + maxDiff(resumed, straight));
    assertTrue(resumed.summary().workerHistory().stream().anyMatch(p -> String.valueOf(p.message())
        .startsWith("resumed from the checkpoint of step 9 in ")), resumed.summary().workerHistory().toString());
    // Had the resumed run started over at minibatch 0, or at 3 x 9, it would not match.
    Dl4jModel fromScratch = new Dl4jEstimator().setNetworkJson(network(8).toJson()).setBatchSize(16).setMaxSteps(6)
        .setGradientAccumulation(3).fit(train);
    assertTrue(maxDiff(resumed, fromScratch) > 1e-3, "the resumed run trained past the checkpoint");
    // The servers count steps: resumed with another number of minibatches per step, the run would go on at
    // another minibatch. It is refused before launch, naming both.
    IllegalArgumentException other = assertThrows(IllegalArgumentException.class, () -> estimator
        .copy(new org.apache.spark.ml.param.ParamMap()).setGradientAccumulation(2).setMaxSteps(20).fit(train));
    assertTrue(other.getMessage().contains("was saved with gradientAccumulation 3 (minibatches per step) but this run "
        + "has 2: resume with gradientAccumulation 3"), other.getMessage());
  }
}
