package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.BlasKernels;
import io.sparkps.ml.scoring.InternalFrames;
import io.sparkps.ml.training.EvalWorker;
import io.sparkps.ps.spec.Consistency;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
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

/** The estimator's checklist: defaults, params, schema, fit/transform, save/load, pipelines, bad params. */
class Dl4jEstimatorTest {
  private static SparkSession spark;
  private static Dataset<Row> points;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(4, "estimator");
    Random random = new Random(3);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 1200; i++) {
      int cls = i % 3;
      double cx = cls == 0 ? -2 : cls == 1 ? 2 : 0;
      double cy = cls == 2 ? 2.5 : -1;
      rows.add(RowFactory.create(cx + random.nextGaussian() * 0.6, cy + random.nextGaussian() * 0.6, (double) cls));
    }
    StructType schema = new StructType().add("x", DataTypes.DoubleType).add("y", DataTypes.DoubleType)
        .add("label", DataTypes.DoubleType);
    points = spark.createDataFrame(rows, schema).repartition(3).cache();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static String network() {
    return new NeuralNetConfiguration.Builder().seed(5).dataType(DataType.FLOAT).updater(new Adam(0.02)).list()
        .layer(new DenseLayer.Builder().nIn(2).nOut(16).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(16).nOut(3)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  private static double accuracy(Dataset<Row> predictions) {
    return predictions.filter("prediction = label").count() / (double) predictions.count();
  }

  @Test
  void defaultsAndParams_areExplained() {
    Dl4jEstimator e = new Dl4jEstimator();
    assertEquals(2, e.getOrDefault(e.numWorkers()));
    assertEquals("SYNC", e.getOrDefault(e.consistency()));
    String explained = e.explainParams();
    assertTrue(explained.contains("numWorkers") && explained.contains("networkJson") && explained.contains("batchSize"));
    Dl4jEstimator copy = e.setEpochs(3).copy(new org.apache.spark.ml.param.ParamMap());
    assertEquals(3, copy.getOrDefault(copy.epochs()));
    assertEquals(e.uid(), copy.uid());
    assertThrows(IllegalArgumentException.class, () -> e.setBatchSize(0));
  }

  @Test
  void pipeline_fitTransformSaveLoad_predictsIdentically() throws Exception {
    VectorAssembler assembler = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features");
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network()).setNumWorkers(2).setNumPs(1)
        .setBatchSize(32).setEpochs(3).setConsistency(Consistency.SYNC);
    PipelineModel model = new Pipeline().setStages(new PipelineStage[] {assembler, estimator}).fit(points);
    Dataset<Row> predicted = model.transform(points);
    double accuracy = accuracy(predicted);
    assertTrue(accuracy > 0.9, "accuracy " + accuracy);
    assertEquals(1200, predicted.count());

    String path = dir.resolve("pipeline").toUri().toString();
    model.write().overwrite().save(path);
    PipelineModel loaded = PipelineModel.load(path);
    // The same predictions and the same probabilities, bit for bit (not only the same argmax).
    List<Row> before = predicted.select("prediction", "probability", "rawPrediction").collectAsList();
    List<Row> after = loaded.transform(points).select("prediction", "probability", "rawPrediction").collectAsList();
    assertEquals(before, after);
    double[] p = ((org.apache.spark.ml.linalg.Vector) before.get(0).get(1)).toArray();
    assertEquals(3, p.length);
    assertEquals(1.0, p[0] + p[1] + p[2], 1e-5, "probabilities of a softmax");
    assertTrue(before.stream().anyMatch(r -> ((org.apache.spark.ml.linalg.Vector) r.get(1)).apply(
        (int) r.getDouble(0)) < 0.99), "probabilities, not a one-hot argmax: some points lie between the classes");
    // The scores are the network's own: its output for the row (one pass gives the raw outputs, the
    // output activation the probabilities) and the prediction their argmax.
    org.deeplearning4j.nn.multilayer.MultiLayerNetwork net =
        (org.deeplearning4j.nn.multilayer.MultiLayerNetwork) ((Dl4jModel) model.stages()[1]).network();
    for (Row r : predicted.select("features", "prediction", "probability").limit(300).collectAsList()) {
      float[] x = org.nd4j.common.util.ArrayUtil.toFloats(((org.apache.spark.ml.linalg.Vector) r.get(0)).toArray());
      double[] expected = net.output(org.nd4j.linalg.factory.Nd4j.create(x, new long[] {1, 2}, 'c'))
          .toDoubleVector();
      double[] scored = ((org.apache.spark.ml.linalg.Vector) r.get(2)).toArray();
      for (int c = 0; c < 3; c++) {
        assertEquals(expected[c], scored[c], 1e-6, "class " + c + " of " + r);
      }
      assertEquals(expected[0] >= expected[1] && expected[0] >= expected[2] ? 0 : expected[1] >= expected[2] ? 1 : 2,
          r.getDouble(1), r.toString());
    }
    // These Sparks give a frame's internal rows and take them back: scoring passes the columns on as they stand.
    org.apache.spark.rdd.RDD<org.apache.spark.sql.catalyst.InternalRow> internal = InternalFrames.rows(points)
        .orElseThrow();
    assertEquals(points.collectAsList(), InternalFrames.frame(spark, internal, points.schema()).orElseThrow()
        .collectAsList());
    // Array feature columns score as the vectors they hold: doubles, floats, and whole numbers as
    // the same numbers in doubles.
    Dl4jModel dl4j = (Dl4jModel) model.stages()[1];
    Dataset<Row> vectors = assembler.transform(points).select("features");
    org.apache.spark.sql.Column array = org.apache.spark.ml.functions.vector_to_array(
        org.apache.spark.sql.functions.col("features"), "float64");
    List<Row> byVector = dl4j.transform(vectors).select("probability").collectAsList();
    assertEquals(byVector, dl4j.transform(vectors.select(array.alias("features"))).select("probability")
        .collectAsList());
    assertEquals(byVector, dl4j.transform(vectors.select(org.apache.spark.ml.functions.vector_to_array(
        org.apache.spark.sql.functions.col("features"), "float32").alias("features"))).select("probability")
        .collectAsList());
    Dataset<Row> whole = vectors.select(array.alias("d")).selectExpr(
        "transform(d, x -> cast(x * 10 as int)) as features");
    List<Row> byInts = dl4j.transform(whole).select("probability").collectAsList();
    assertEquals(dl4j.transform(whole.select(whole.col("features").cast("array<double>").alias("features")))
        .select("probability").collectAsList(), byInts);
    assertTrue(!byInts.equals(byVector), "the whole numbers are other inputs than the vectors");
    Dataset<Row> holed = vectors.select(array.alias("d")).selectExpr(
        "transform(d, (x, i) -> if(i = 1, cast(null as double), x)) as features");
    Exception refused = assertThrows(Exception.class, () -> dl4j.transform(holed).collectAsList());
    assertTrue(String.valueOf(refused.getMessage()).contains("value 1 of a features array is null: the features need "
        + "a number at every position (fill or drop the rows with nulls before scoring)"), refused.getMessage());

    String modelPath = dir.resolve("model").toUri().toString();
    dl4j.write().save(modelPath);
    Dl4jModel reloaded = Dl4jModel.load(modelPath);
    assertEquals(dl4j.uid(), reloaded.uid());
    assertEquals(dl4j.network().params(), reloaded.network().params());
    assertEquals(dl4j.provenance(), reloaded.provenance());
    assertEquals(spark.version(), reloaded.provenance().get("version.spark.built"), "the Spark this build was made for");
    assertEquals("1.0.0-M2.1", reloaded.provenance().get("version.dl4j"));
    assertEquals("3", reloaded.provenance().get("param.epochs"));
    assertTrue(reloaded.provenance().get("input.schema").contains("\"features\""), reloaded.provenance().toString());

    // A network file whose sizes lie is refused before anything that large is allocated.
    java.nio.file.Path network = dir.resolve("model").resolve("data").resolve("network.bin");
    byte[] bytes = java.nio.file.Files.readAllBytes(network);
    int jsonBytes = java.nio.ByteBuffer.wrap(bytes).getInt(0);
    java.nio.file.Files.deleteIfExists(network.resolveSibling(".network.bin.crc")); // Hadoop's checksum of the old bytes
    java.nio.ByteBuffer.wrap(bytes).putInt(0, Integer.MAX_VALUE); // the JSON's length
    java.nio.file.Files.write(network, bytes);
    java.io.UncheckedIOException e = assertThrows(java.io.UncheckedIOException.class, () -> Dl4jModel.load(modelPath));
    assertTrue(e.getCause().getMessage().contains("is damaged: its network JSON claims 2147483647 bytes"),
        e.getCause().getMessage());
    java.nio.ByteBuffer.wrap(bytes).putInt(0, jsonBytes).putInt(4 + jsonBytes, 1 << 30); // the parameters' count
    java.nio.file.Files.write(network, bytes);
    e = assertThrows(java.io.UncheckedIOException.class, () -> Dl4jModel.load(modelPath));
    assertTrue(e.getCause().getMessage().contains("claims 1073741824 parameters"), e.getCause().getMessage());
  }

  @Test
  void crossValidator_overTheEstimator_picksAModelThatPredictsWell() {
    Dataset<Row> assembled = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(points);
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(32);
    org.apache.spark.ml.param.ParamMap[] grid = new org.apache.spark.ml.tuning.ParamGridBuilder()
        .addGrid(estimator.epochs(), new int[] {1, 2}).build();
    org.apache.spark.ml.tuning.CrossValidatorModel cv = new org.apache.spark.ml.tuning.CrossValidator()
        .setEstimator(estimator).setEstimatorParamMaps(grid).setNumFolds(2)
        .setEvaluator(new org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator().setMetricName("accuracy"))
        .fit(assembled);
    assertEquals(2, cv.avgMetrics().length);
    assertTrue(cv.avgMetrics()[1] > 0.8, "2 epochs: " + java.util.Arrays.toString(cv.avgMetrics()));
    assertTrue(accuracy(cv.transform(assembled)) > 0.8);
  }

  @Test
  void fitAsync_returnsAtOnce_showsProgress_andGivesTheModel() throws Exception {
    Dataset<Row> assembled = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(points);
    FitJob job = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(16).setEpochs(3).fitAsync(assembled);
    assertTrue(!job.status().isDone());
    Dl4jModel model = job.get(java.time.Duration.ofMinutes(3));
    // Each worker says, in every report from its first, when its OpenBLAS runs kernels below its CPU's
    // (this JVM is the workers' own).
    java.util.Optional<String> advice = BlasKernels.advice();
    assertEquals(advice.isPresent() ? 2 : 0, job.progress().stream()
        .filter(p -> String.valueOf(p.message()).contains("OPENBLAS_CORETYPE=")).count(), advice + " against "
        + job.progress());
    assertEquals(io.sparkps.spark.JobStatus.SUCCEEDED, job.status());
    assertTrue(job.progress().stream().anyMatch(p -> p.step() > 0 && p.metrics().containsKey("loss")), job.progress().toString());
    assertTrue(accuracy(model.transform(assembled)) > 0.9);
    TrainingSummary summary = model.summary();
    assertEquals(1, summary.stageAttempts());
    assertTrue(summary.lastLoss(0) < 0.5 && summary.lastLoss(1) < 0.5, "final losses " + summary.lastLoss(0) + ", "
        + summary.lastLoss(1));
    // What a Spark Connect client reads of a model: the only method a Connect server lets it call on ours.
    long steps = summary.workerHistory().stream().mapToLong(io.sparkps.spark.TaskProgress::step).max().getAsLong();
    assertEquals("Dl4jModel: uid=" + model.uid() + ", classifier=true, outputs=3, parameters="
        + model.network().numParams() + ", embeddings=false, steps=" + steps + ", elapsedSeconds="
        + summary.elapsed().toMillis() / 1000.0 + ", loss=" + (float) summary.lastLoss(0), model.toString());
  }

  @Test
  void pythonSnapshot_ofAnEndedRun_showsItsEnd_evenWhileTheListenersLagBehind() throws Exception {
    Dataset<Row> assembled = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(points);
    // Holds the run's listener thread at its first delivery until released: the run's status says it ended
    // while its listeners (Python's progress line among them) have heard nothing yet.
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    io.sparkps.spark.ProgressListener holder = new io.sparkps.spark.ProgressListener() {
      @Override
      public void onProgress(io.sparkps.spark.TaskProgress progress) {
        try {
          release.await(2, java.util.concurrent.TimeUnit.MINUTES);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    };
    FitJob job = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(16).setEpochs(1).addListener(holder)
        .fitAsync(assembled);
    io.sparkps.ml.python.PythonJob python = new io.sparkps.ml.python.PythonJob(job);
    job.get(java.time.Duration.ofMinutes(3));
    java.util.concurrent.ExecutorService reader = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      java.util.concurrent.Future<String> snapshot = reader.submit(python::snapshot);
      Thread.sleep(500); // the snapshot is being taken while the listeners are held
      release.countDown();
      com.fasterxml.jackson.databind.JsonNode s = new com.fasterxml.jackson.databind.ObjectMapper()
          .readTree(snapshot.get(1, java.util.concurrent.TimeUnit.MINUTES));
      assertTrue(s.get("done").asBoolean());
      String line = s.get("line").asText();
      assertTrue(line.matches("\\[sparkps] step (\\d+)/\\1 \\(100%\\) epoch 1 loss \\d.* - succeeded"), line);
    } finally {
      release.countDown();
      reader.shutdownNow();
    }
  }

  @Test
  void evaluationData_isScoredAsTrainingAdvances_intoTheSummary() throws Exception {
    VectorAssembler assembler = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features");
    Dataset<Row>[] split = assembler.transform(points).randomSplit(new double[] {0.8, 0.2}, 1);
    // Enough steps (60 per epoch) that training outlasts the evaluator's start-up on a warm JVM.
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(8).setEpochs(20)
        .setEvalEverySeconds(0.05).fitAsync(split[0], split[1]).get(java.time.Duration.ofMinutes(3));
    List<io.sparkps.spark.TaskProgress> history = model.summary().evaluatorHistory();
    assertTrue(history.size() >= 2, "evaluations: " + history.size());
    io.sparkps.spark.TaskProgress last = history.get(history.size() - 1);
    assertTrue(last.metrics().get("accuracy") > 0.9, "final evaluation " + last.metrics());
    assertTrue(model.toString().endsWith(", accuracy=" + last.metrics().get("accuracy").floatValue() + ", f1="
        + last.metrics().get("f1").floatValue() + ", loss=" + last.metrics().get("loss").floatValue() + ", precision="
        + last.metrics().get("precision").floatValue() + ", recall=" + last.metrics().get("recall").floatValue()),
        model.toString());
    assertTrue(last.metrics().keySet().containsAll(List.of("precision", "recall", "f1", "loss")));
    assertTrue(history.get(0).step() < last.step(), "evaluated at advancing versions");
    double finalAccuracy = accuracy(model.transform(split[1]));
    assertEquals(finalAccuracy, last.metrics().get("accuracy"), 0.02, "the last evaluation saw the final model");
  }

  @Test
  void deferredEvaluation_scoresItsCopiesAfterTraining_eachWithWhenItWasTaken() throws Exception {
    VectorAssembler assembler = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features");
    Dataset<Row>[] split = assembler.transform(points).randomSplit(new double[] {0.8, 0.2}, 1);
    List<io.sparkps.spark.TaskProgress> arrivals = new java.util.concurrent.CopyOnWriteArrayList<>();
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(8).setEpochs(20)
        .setEvalEverySeconds(0.05).setEvalDeferred(true).addListener(arrivals::add);
    long before = System.currentTimeMillis();
    Dl4jModel model = estimator.fitAsync(split[0], split[1]).get(java.time.Duration.ofMinutes(3));
    long after = System.currentTimeMillis();
    List<io.sparkps.spark.TaskProgress> history = model.summary().evaluatorHistory();
    // Scored after training in a burst, faster than heartbeats: each report is flushed, none is lost.
    assertTrue(history.size() >= 3, "evaluations: " + history);
    double taken = before;
    long version = 0;
    for (io.sparkps.spark.TaskProgress p : history) {
      double at = p.metrics().get("takenAtMillis");
      assertTrue(at > taken && at <= after, "copies taken in order during the fit: " + history);
      assertTrue(p.step() > version, "at advancing versions: " + history);
      taken = at;
      version = p.step();
    }
    // No score arrives while the workers still step: the first evaluator report comes after the
    // last worker report that advanced a step.
    int firstScore = -1;
    int lastStep = -1;
    for (int i = 0; i < arrivals.size(); i++) {
      io.sparkps.spark.TaskProgress p = arrivals.get(i);
      if (p.role() == io.sparkps.spark.Role.EVALUATOR && p.metrics().containsKey("accuracy") && firstScore < 0) {
        firstScore = i;
      }
      if ((p.role() == io.sparkps.spark.Role.WORKER || p.role() == io.sparkps.spark.Role.CHIEF) && p.step() > 0) {
        lastStep = i;
      }
    }
    assertTrue(firstScore > lastStep, "first score at arrival " + firstScore + ", last worker step at " + lastStep);
    io.sparkps.spark.TaskProgress last = history.get(history.size() - 1);
    long finalStep = model.summary().workerHistory().stream().mapToLong(io.sparkps.spark.TaskProgress::step).max()
        .orElse(-1);
    assertEquals(finalStep, last.step(), "the last copy, taken once training stopped, is scored too (SYNC: "
        + "version = step)");
    assertTrue(last.metrics().get("accuracy") > 0.9, "final evaluation " + last.metrics());
    // Each copy is scored with its own values, not the final ones: the losses differ from copy to
    // copy. (Whether the first is worse than the last is noise once this small set is learned, as it
    // may be by the evaluator's first copy: 0.0187 at step 29 against 0.019 at step 417 in one run.)
    long distinct = history.stream().map(p -> p.metrics().get("loss")).distinct().count();
    assertTrue(distinct >= 2 && distinct * 2 >= history.size(), distinct + " distinct losses among the scored copies "
        + "of advancing training: " + history);
  }

  @Test
  void deferredEvaluation_thinsItsCopies_keepingTheFirstAndTheLast() {
    List<Integer> copies = new ArrayList<>(List.of(0, 1, 2, 3, 4, 5));
    EvalWorker.thin(copies);
    assertEquals(List.of(0, 2, 4, 5), copies);
    copies = new ArrayList<>(List.of(0, 1, 2, 3, 4));
    EvalWorker.thin(copies);
    assertEquals(List.of(0, 2, 4), copies);
  }

  @Test
  void evaluationData_isScoredDuringAPipelinesFit() {
    VectorAssembler assembler = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features");
    Dataset<Row>[] split = assembler.transform(points).randomSplit(new double[] {0.8, 0.2}, 1);
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(8).setEpochs(20)
        .setEvalEverySeconds(0.05).setEvaluationData(split[1]);
    PipelineModel fitted = new Pipeline().setStages(new PipelineStage[] {estimator}).fit(split[0]);
    List<io.sparkps.spark.TaskProgress> history = ((Dl4jModel) fitted.stages()[0]).summary().evaluatorHistory();
    assertTrue(history.size() >= 2, "evaluations: " + history.size());
    assertTrue(history.get(history.size() - 1).metrics().get("accuracy") > 0.9, history.toString());
  }

  @Test
  void arrayFeatures_trainAndPredict() {
    Dataset<Row> arrays = points.selectExpr("array(cast(x as float), cast(y as float)) as features", "label");
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(32).setEpochs(2).fit(arrays);
    assertTrue(accuracy(model.transform(arrays)) > 0.85);
  }

  @Test
  void estimator_savesAndLoadsItsParams() throws Exception {
    Dl4jEstimator e = new Dl4jEstimator().setNetworkJson(network()).setEpochs(4).setNumPs(2);
    String path = dir.resolve("estimator").toUri().toString();
    e.write().save(path);
    Dl4jEstimator loaded = Dl4jEstimator.load(path);
    assertEquals(4, loaded.getOrDefault(loaded.epochs()));
    assertEquals(2, loaded.getOrDefault(loaded.numPs()));
    assertEquals(network(), loaded.getOrDefault(loaded.networkJson()));
  }

  @Test
  void badColumns_failBeforeLaunch_namingTheColumnAndTheFix() throws InterruptedException {
    SparkPsJobs jobs = SparkPsJobs.on(spark);
    Dl4jEstimator e = new Dl4jEstimator().setNetworkJson(network());
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> e.fit(points));
    assertTrue(missing.getMessage().contains("features column 'features' is not in the DataFrame"), missing.getMessage());
    IllegalArgumentException type = assertThrows(IllegalArgumentException.class, () -> e.setFeaturesCol("x").fit(points));
    assertTrue(type.getMessage().contains("'x' is double") && type.getMessage().contains("VectorAssembler"),
        type.getMessage());
    Dataset<Row> assembled = new VectorAssembler().setInputCols(new String[] {"x", "y", "label"}).setOutputCol("features")
        .transform(points);
    IllegalArgumentException width = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network()).fit(assembled));
    assertTrue(width.getMessage().contains("has 3 values in its first row but the network's first layer takes 2"),
        width.getMessage());
    Dataset<Row> badLabels = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(points).selectExpr("features", "label + 1 as label");
    IllegalArgumentException labels = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network()).fit(badLabels));
    assertTrue(labels.getMessage().contains("ranges over [1.0, 3.0] but the output layer has 3 classes"),
        labels.getMessage());
    IllegalArgumentException empty = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network()).fit(badLabels.limit(0)));
    assertTrue(empty.getMessage().contains("the DataFrame is empty"), empty.getMessage());
    IllegalArgumentException noNet = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().fit(points));
    assertTrue(noNet.getMessage().contains("networkJson is not set"), noNet.getMessage());
    assertEquals(List.of(), jobs.sinceLast(), "no SparkPS job started for a refused fit");
    // The listener does see SparkPS's jobs: a fit that is not refused starts its ps and training jobs.
    new Dl4jEstimator().setNetworkJson(network()).setMaxSteps(1).fit(new VectorAssembler()
        .setInputCols(new String[] {"x", "y"}).setOutputCol("features").transform(points));
    List<String> started = jobs.sinceLast();
    assertTrue(started.stream().anyMatch(g -> g.endsWith("-ps-0")) && started.stream().anyMatch(g -> g.endsWith("-train")),
        started.toString());
  }

  /**
   * A caller that stops waiting for fit (a cancelled Spark Connect operation, an interrupted notebook
   * cell) cancels its run: its Spark jobs end, rather than training on for no one.
   */
  @Test
  void fit_interrupted_cancelsItsRun() throws Exception {
    java.util.concurrent.CountDownLatch training = new java.util.concurrent.CountDownLatch(1);
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network()).setNumWorkers(2).setNumPs(1)
        .setBatchSize(8).setEpochs(500).addListener(p -> {
          if (p.step() > 0) {
            training.countDown();
          }
        });
    java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
    Thread caller = new Thread(() -> {
      try {
        estimator.fit(new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
            .transform(points));
      } catch (Throwable t) {
        thrown.set(t);
      }
    }, "fit-caller");
    caller.start();
    assertTrue(training.await(2, java.util.concurrent.TimeUnit.MINUTES), "the run trains");
    assertTrue(activeJobs() >= 2, "the ps stage and the workers' stage run");
    caller.interrupt();
    caller.join(java.time.Duration.ofMinutes(1).toMillis());
    assertFalse(caller.isAlive(), "fit returned once interrupted");
    assertTrue(thrown.get() instanceof IllegalStateException && thrown.get().getMessage().contains("cancelled"),
        String.valueOf(thrown.get()));
    long deadline = System.nanoTime() + java.time.Duration.ofMinutes(1).toNanos();
    while (activeJobs() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertEquals(0, activeJobs(), "the run's Spark jobs ended");
  }

  private static long activeJobs() {
    org.apache.spark.SparkStatusTracker tracker = spark.sparkContext().statusTracker();
    return java.util.Arrays.stream(tracker.getActiveJobIds()).mapToObj(tracker::getJobInfo)
        .filter(info -> info.isDefined()).count();
  }

  /** A preset network is sized to the data when fitting: its features' width and its label's classes. */
  @Test
  void aPresetNetwork_isSizedToTheDataWhenFitting() {
    Dataset<Row> data = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(points);
    Dl4jEstimator estimator = new Dl4jEstimator().setNetwork("mlp:16").setNumWorkers(2).setNumPs(1).setBatchSize(16)
        .setEpochs(3).setSeed(4);
    assertTrue(java.util.Arrays.asList(estimator.transformSchema(data.schema()).fieldNames()).contains("probability"));
    Dl4jModel model = estimator.fit(data);
    org.deeplearning4j.nn.multilayer.MultiLayerNetwork net = (org.deeplearning4j.nn.multilayer.MultiLayerNetwork)
        model.network();
    assertEquals(2, net.layerInputSize(0), "the features' width");
    assertEquals(16, net.layerSize(0));
    assertEquals(3, net.layerSize(1), "the label's classes");
    assertTrue(accuracy(model.transform(data)) > 0.9);
    assertFalse(estimator.isDefined(estimator.networkJson()), "the estimator itself is left as it was");
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> estimator.setNetwork("mlp:a"));
    assertTrue(bad.getMessage().contains("network given invalid value mlp:a"), bad.getMessage());
  }
}
