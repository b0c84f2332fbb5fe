package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.TaskProgress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
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
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * What the workers' ps clients put on the sockets: bfloat16 transfers take half the bytes of
 * float32 and still train. Same-JVM transfers are off, so local Spark moves the bulk data over the
 * shard's loopback port as between executors.
 */
class WireTransfersTest {
  private static SparkSession spark;
  private static Dataset<Row> points;

  @BeforeAll
  static void start() {
    System.setProperty(PsClient.SAME_JVM_PROPERTY, "false");
    spark = LocalSpark.start(4, "wire");
    Random random = new Random(3);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 1200; i++) {
      int cls = i % 3;
      rows.add(RowFactory.create((cls == 1 ? 2.0 : -2.0) + random.nextGaussian() * 0.6,
          (cls == 2 ? 2.5 : -1.0) + random.nextGaussian() * 0.6, (double) cls));
    }
    StructType schema = new StructType().add("x", DataTypes.DoubleType).add("y", DataTypes.DoubleType)
        .add("label", DataTypes.DoubleType);
    points = new VectorAssembler().setInputCols(new String[] {"x", "y"}).setOutputCol("features")
        .transform(spark.createDataFrame(rows, schema)).repartition(2).cache();
  }

  @AfterAll
  static void stop() {
    spark.stop();
    System.clearProperty(PsClient.SAME_JVM_PROPERTY);
  }

  /** 2-512-512-3: its 512 x 512 weights alone are 1 MiB, so every push and pull takes the bulk port. */
  private static String network() {
    return new NeuralNetConfiguration.Builder().seed(5).dataType(DataType.FLOAT).updater(new Adam(0.005)).list()
        .layer(new DenseLayer.Builder().nIn(2).nOut(512).activation(Activation.TANH).build())
        .layer(new DenseLayer.Builder().nIn(512).nOut(512).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(512).nOut(3)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  /** The socket bytes of the run's workers, summed, from their last reports. */
  private static double wireBytes(Dl4jModel model) {
    Map<Integer, Double> last = new HashMap<>();
    for (TaskProgress p : model.summary().workerHistory()) {
      last.merge(p.index(), p.metrics().getOrDefault("wireBytes", 0.0), Math::max);
    }
    return last.values().stream().mapToDouble(Double::doubleValue).sum();
  }

  private static Dl4jModel fit(boolean bf16) {
    return new Dl4jEstimator().setNetworkJson(network()).setBatchSize(32).setMaxSteps(30).setSeed(1)
        .setConsistency(io.sparkps.ps.spec.Consistency.SYNC).setBf16Transfers(bf16).fit(points);
  }

  /**
   * Checks that {@code dense} put at least 2 workers x {@code steps} x (push + pull) of the 262,656
   * float32 values of the middle layer on the sockets (transfers overlapping the passes go layer by
   * layer, and the other layers' parts, under 1 MiB, go in gRPC calls), that {@code other} put
   * between {@code low} and {@code high} times its bytes, and that {@code other} still trained.
   */
  private static void assertBytesAndAccuracy(String what, Dl4jModel dense, Dl4jModel other, int steps, double low,
      double high) {
    double denseBytes = wireBytes(dense);
    double otherBytes = wireBytes(other);
    assertTrue(denseBytes > 2 * steps * 2 * 4.0 * 262_656, "float32 socket bytes " + denseBytes);
    double ratio = otherBytes / denseBytes;
    assertTrue(ratio > low && ratio < high, what + " " + otherBytes + " bytes against float32 " + denseBytes);
    double accuracy = other.transform(points).filter("prediction = label").count() / (double) points.count();
    assertTrue(accuracy > 0.9, "accuracy with " + what + " transfers " + accuracy);
  }

  @Test
  void bf16Transfers_halveTheSocketBytes_andStillTrain() {
    assertBytesAndAccuracy("bf16", fit(false), fit(true), 30, 0.49, 0.52);
  }

  @Test
  void gradientAccumulation_ofThreeMinibatches_movesAThirdOfTheBytes_andStillTrains() {
    Dl4jModel accumulated = new Dl4jEstimator().setNetworkJson(network()).setBatchSize(32).setMaxSteps(30).setSeed(1)
        .setConsistency(io.sparkps.ps.spec.Consistency.SYNC).setGradientAccumulation(3).fit(points);
    assertBytesAndAccuracy("accumulated", fit(false), accumulated, 30, 0.32, 0.35);
    // Progress still counts minibatches: 30 of 32 examples per worker.
    for (TaskProgress p : accumulated.summary().workerHistory()) {
      assertTrue(p.step() <= 30 && p.examples() == 32 * p.step(), p.toString());
    }
    assertEquals(30, accumulated.summary().workerHistory().stream().mapToLong(TaskProgress::step).max().orElse(0));
  }

  @Test
  void gradientAccumulation_withSparseTransfers_isRefusedBeforeLaunch() throws InterruptedException {
    SparkPsJobs jobs = SparkPsJobs.on(spark);
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network()).setConsistency(io.sparkps.ps.spec.Consistency.ASYNC)
            .setSparseTransfers(0.01).setGradientAccumulation(2).fit(points));
    assertTrue(e.getMessage().startsWith("gradientAccumulation 2 does not go with sparse transfers"), e.getMessage());
    assertEquals(List.of(), jobs.sinceLast(), "no SparkPS job started");
    assertThrows(IllegalArgumentException.class, () -> new Dl4jEstimator().setGradientAccumulation(0));
  }

  private static Dl4jModel fitAsync(double density) {
    return new Dl4jEstimator().setNetworkJson(network()).setBatchSize(32).setMaxSteps(40).setSeed(1)
        .setConsistency(io.sparkps.ps.spec.Consistency.ASYNC).setSparseTransfers(density).fit(points);
  }

  @Test
  void sparseTransfers_sendAFewPercentOfTheBytes_andStillTrain() {
    // The 512 x 512 weights go as pairs, 1% per push (2% of their bytes) and 2% per pull (4%: both
    // workers' updates), after each worker's first, whole pull; the rest (1% of the model) goes dense.
    assertBytesAndAccuracy("sparse", fitAsync(0), fitAsync(0.01), 40, 0.02, 0.07);
  }

  @Test
  void sparseTransfers_withSync_areRefusedBeforeLaunch() throws InterruptedException {
    SparkPsJobs jobs = SparkPsJobs.on(spark);
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network()).setSparseTransfers(0.01).fit(points));
    assertTrue(e.getMessage().startsWith("sparseDensity 0.01 needs consistency ASYNC or SSP"), e.getMessage());
    assertEquals(List.of(), jobs.sinceLast(), "no SparkPS job started");
  }
}
