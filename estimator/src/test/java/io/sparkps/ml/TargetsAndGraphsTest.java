package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.feature.StringIndexer;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Label kinds (class index, one-hot, real values), regression metrics, ComputationGraphs, raw
 * outputs, string labels through a StringIndexer, and the summary saved with the model.
 */
class TargetsAndGraphsTest {
  private static SparkSession spark;
  private static Dataset<Row> points;
  private static Dataset<Row> linear;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(4, "targets");
    Random random = new Random(11);
    List<Row> classes = new ArrayList<>();
    List<Row> values = new ArrayList<>();
    String[] names = {"red", "green", "blue"};
    for (int i = 0; i < 1200; i++) {
      int cls = i % 3;
      double x = (cls == 0 ? -2 : cls == 1 ? 2 : 0) + random.nextGaussian() * 0.6;
      double y = (cls == 2 ? 2.5 : -1) + random.nextGaussian() * 0.6;
      classes.add(RowFactory.create(x, y, names[cls], (double) cls));
      double a = random.nextDouble() * 2 - 1;
      double b = random.nextDouble() * 2 - 1;
      values.add(RowFactory.create(a, b, 2 * a - b + 0.5 + random.nextGaussian() * 0.05, a * b));
    }
    points = spark.createDataFrame(classes, new StructType().add("x", DataTypes.DoubleType)
        .add("y", DataTypes.DoubleType).add("colour", DataTypes.StringType).add("label", DataTypes.DoubleType))
        .repartition(3).cache();
    linear = spark.createDataFrame(values, new StructType().add("a", DataTypes.DoubleType)
        .add("b", DataTypes.DoubleType).add("target", DataTypes.DoubleType).add("product", DataTypes.DoubleType))
        .repartition(2).cache();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static String regressor(int outputs) {
    return new NeuralNetConfiguration.Builder().seed(3).dataType(DataType.FLOAT).updater(new Adam(0.01)).list()
        .layer(new DenseLayer.Builder().nIn(2).nOut(32).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MSE).nIn(32).nOut(outputs)
            .activation(Activation.IDENTITY).build())
        .build().toJson();
  }

  private static String graphClassifier() {
    ComputationGraphConfiguration conf = new NeuralNetConfiguration.Builder().seed(5).dataType(DataType.FLOAT)
        .updater(new Adam(0.02)).graphBuilder().addInputs("in")
        .addLayer("hidden", new DenseLayer.Builder().nIn(2).nOut(16).activation(Activation.TANH).build(), "in")
        .addLayer("out", new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(16).nOut(3)
            .activation(Activation.SOFTMAX).build(), "hidden")
        .setOutputs("out").build();
    return conf.toJson();
  }

  private static Dataset<Row> assembled(Dataset<Row> data, String... cols) {
    return new VectorAssembler().setInputCols(cols).setOutputCol("features").transform(data);
  }

  @Test
  void regression_onARealLabel_reportsMseMaeR2_andPredictsNumbers() throws Exception {
    Dataset<Row>[] split = assembled(linear, "a", "b").randomSplit(new double[] {0.8, 0.2}, 2);
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(regressor(1)).setLabelCol("target").setBatchSize(32)
        .setEpochs(25).setEvalEverySeconds(0.05).fitAsync(split[0], split[1]).get(Duration.ofMinutes(3));
    assertFalse(model.isClassifier());
    Dataset<Row> predicted = model.transform(split[1]);
    assertEquals(DataTypes.DoubleType, predicted.schema().apply("prediction").dataType());
    assertFalse(Arrays.asList(predicted.columns()).contains("probability"), "a regressor has no probabilities");
    double mse = predicted.selectExpr("avg((prediction - target) * (prediction - target))").head().getDouble(0);
    assertTrue(mse < 0.02, "test MSE " + mse);
    java.util.Map<String, Double> last = model.summary().lastEvaluation();
    assertTrue(last.keySet().containsAll(List.of("mse", "mae", "r2", "loss")), last.toString());
    assertTrue(last.get("r2") > 0.95, "R2 " + last);
    // The evaluator's last report scores the final parameters on the same rows: equal up to float rounding.
    assertEquals(mse, last.get("mse"), mse * 1e-3, "the evaluator's MSE against the final model's");
  }

  @Test
  void regression_withSeveralOutputs_takesArrayLabels_andPredictsVectors() {
    Dataset<Row> data = assembled(linear, "a", "b").selectExpr("features", "array(target, product) as targets");
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(regressor(2)).setLabelCol("targets").setBatchSize(32)
        .setEpochs(20).fit(data);
    List<Row> rows = model.transform(data).select("prediction", "targets").collectAsList();
    double[] squared = new double[2];
    for (Row r : rows) {
      Vector prediction = (Vector) r.get(0);
      assertEquals(2, prediction.size());
      List<Double> targets = r.getList(1);
      for (int k = 0; k < 2; k++) {
        squared[k] += Math.pow(prediction.apply(k) - targets.get(k), 2) / rows.size();
      }
    }
    // Each output learns its own target, in the label's order: 2a - b + 0.5 (noise variance 0.0025, variance
    // 1.67) and a * b (variance 1/9). Swapped or untrained outputs are off by 0.1 or more.
    assertTrue(squared[0] < 0.02, "MSE of output 0 (2a - b + 0.5): " + squared[0]);
    assertTrue(squared[1] < 0.02, "MSE of output 1 (a * b): " + squared[1]);
    IllegalArgumentException scalar = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(regressor(2)).setLabelCol("target").fit(assembled(linear, "a", "b")));
    assertTrue(scalar.getMessage().contains("'target' holds one number per row but the network's output layer has 2"),
        scalar.getMessage());
  }

  @Test
  void oneHotLabels_trainAClassifier() {
    Dataset<Row> data = assembled(points, "x", "y").selectExpr("features", "label",
        "array(cast(label = 0 as double), cast(label = 1 as double), cast(label = 2 as double)) as onehot");
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(graphClassifier()).setLabelCol("onehot").setBatchSize(32)
        .setEpochs(3).fit(data);
    double accuracy = model.transform(data).filter("prediction = label").count() / (double) data.count();
    assertTrue(accuracy > 0.9, "accuracy " + accuracy);
  }

  @Test
  void computationGraph_trainsPredicts_andItsRawOutputsGiveTheProbabilities() throws Exception {
    VectorAssembler assembler = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features");
    StringIndexer indexer = new StringIndexer().setInputCol("colour").setOutputCol("colourIndex");
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(graphClassifier()).setLabelCol("colourIndex")
        .setBatchSize(32).setEpochs(3);
    PipelineModel model = new Pipeline().setStages(new PipelineStage[] {assembler, indexer, estimator})
        .fit(points.drop("label"));
    Dataset<Row> predicted = model.transform(points);
    double accuracy = predicted.filter("prediction = colourIndex").count() / (double) predicted.count();
    assertTrue(accuracy > 0.9, "accuracy " + accuracy);
    Dl4jModel dl4j = (Dl4jModel) model.stages()[2];
    assertTrue(dl4j.network() instanceof ComputationGraph);
    for (Row r : predicted.select("probability", "rawPrediction").limit(20).collectAsList()) {
      double[] p = ((Vector) r.get(0)).toArray();
      double[] raw = ((Vector) r.get(1)).toArray();
      double sum = 0;
      for (double z : raw) {
        sum += Math.exp(z);
      }
      for (int c = 0; c < p.length; c++) {
        assertEquals(p[c], Math.exp(raw[c]) / sum, 1e-5, "softmax(rawPrediction) = probability");
      }
    }
    String path = dir.resolve("graph-pipeline").toUri().toString();
    model.write().save(path);
    assertEquals(predicted.select("prediction").collectAsList(),
        PipelineModel.load(path).transform(points).select("prediction").collectAsList());
  }

  @Test
  void summary_isSavedWithTheModel() throws Exception {
    Dataset<Row>[] split = assembled(points, "x", "y").randomSplit(new double[] {0.8, 0.2}, 4);
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(graphClassifier()).setBatchSize(16).setMaxSteps(40)
        .setEvalEverySeconds(0.05).fitAsync(split[0], split[1]).get(Duration.ofMinutes(3));
    assertEquals(40, model.summary().workerHistory().stream().mapToLong(p -> p.step()).max().orElse(0),
        "maxSteps bounds every worker's steps");
    String path = dir.resolve("model").toUri().toString();
    model.write().save(path);
    Dl4jModel loaded = Dl4jModel.load(path);
    TrainingSummary before = model.summary();
    TrainingSummary after = loaded.summary();
    assertEquals(before.workerHistory().size(), after.workerHistory().size());
    assertEquals(before.evaluatorHistory().size(), after.evaluatorHistory().size());
    assertEquals(before.lastEvaluation(), after.lastEvaluation());
    assertEquals(before.lastLoss(1), after.lastLoss(1));
    assertEquals(before.elapsed().toMillis(), after.elapsed().toMillis());
  }

  @Test
  void badValues_failNamingTheColumnPartitionAndOffset() {
    Dataset<Row> withNaN = assembled(points, "x", "y").selectExpr("features",
        "case when x > 3.4 then double('NaN') else label end as label").coalesce(1);
    IllegalArgumentException nullLabel = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(regressor(1)).fit(withNaN.selectExpr("features",
            "case when label = 1 then null else label end as label")));
    assertTrue(nullLabel.getMessage().contains("column 'label' is null in"), nullLabel.getMessage());
    Exception nan = assertThrows(Exception.class, () -> new Dl4jEstimator().setNetworkJson(regressor(1)).setNumWorkers(1)
        .fit(withNaN));
    String message = String.valueOf(nan.getMessage());
    assertTrue(message.contains("column 'label' holds NaN in row ") && message.contains(" of input partition 0"), message);
    IllegalArgumentException tooFew = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(regressor(1)).setLabelCol("target").setNumWorkers(2)
            .fit(assembled(linear, "a", "b").limit(1)));
    assertTrue(tooFew.getMessage().contains("has 1 rows for 2 workers"), tooFew.getMessage());
    IllegalArgumentException notJson = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson("{\"layers\": []}").fit(withNaN));
    assertTrue(notJson.getMessage().contains("neither a MultiLayerConfiguration nor a ComputationGraphConfiguration"),
        notJson.getMessage());
  }

  @Test
  void aBadFeatureValue_failsInOneAttemptOfTheBarrierStage_withinSeconds() {
    // Caught by the worker that reads the row (the checks before launch look at the label and the
    // first row only): a deterministic error, so the barrier stage is not retried.
    Dataset<Row> nanFeature = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .setHandleInvalid("keep").transform(points.selectExpr("case when x > 3.4 then double('NaN') else x end as x",
            "y", "label"));
    java.util.Set<String> barrierAttempts = java.util.concurrent.ConcurrentHashMap.newKeySet();
    org.apache.spark.scheduler.SparkListener listener = new org.apache.spark.scheduler.SparkListener() {
      @Override
      public void onStageSubmitted(org.apache.spark.scheduler.SparkListenerStageSubmitted submitted) {
        var info = submitted.stageInfo();
        if (scala.collection.JavaConverters.seqAsJavaList(info.rddInfos()).stream().anyMatch(r -> r.isBarrier())) {
          barrierAttempts.add(info.stageId() + "." + info.attemptNumber());
        }
      }
    };
    spark.sparkContext().addSparkListener(listener);
    try {
      long t0 = System.nanoTime();
      Exception e = assertThrows(Exception.class, () -> new Dl4jEstimator().setNetworkJson(regressor(1))
          .setLabelCol("label").setNumWorkers(2).fit(nanFeature));
      long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
      assertTrue(e.getMessage().contains("column 'features' holds NaN in row ")
          && e.getMessage().contains("(not retried: another attempt would meet the same error)"), e.getMessage());
      assertEquals(1, barrierAttempts.size(), "barrier stage attempts: " + barrierAttempts);
      assertTrue(seconds < 20, "failed after " + seconds + " s");
    } finally {
      spark.sparkContext().removeSparkListener(listener);
    }
  }
}
