package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.IdxFile;
import io.sparkps.ps.Consistency;
import io.sparkps.spark.ClusterSpec;
import java.io.IOException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/** A 784-256-10 MLP on Fashion-MNIST with 2 workers and 1 ps reaches 85% test accuracy. */
class FashionMnistTrainingTest {
  private static SparkSession spark;
  private static Dataset<Row> train;
  private static INDArray testX;
  private static float[] testY;

  @BeforeAll
  static void start() throws IOException {
    spark = io.sparkps.ml.LocalSpark.start(4, "fashion-mnist");
    train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).cache();
    IdxFile x = IdxFile.read(IdxDataFrames.FASHION_MNIST.resolve("t10k-images-idx3-ubyte.gz"));
    testX = Nd4j.create(x.values(), new long[] {x.items(), 784}, 'c').divi(255);
    testY = IdxFile.read(IdxDataFrames.FASHION_MNIST.resolve("t10k-labels-idx1-ubyte.gz")).values();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static String mlp() {
    return new NeuralNetConfiguration.Builder().seed(42).dataType(DataType.FLOAT).updater(new Adam(1e-3)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(256).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(256).nOut(10)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  @ParameterizedTest
  @EnumSource(value = Consistency.class, names = {"SYNC", "ASYNC"})
  void mlp_twoWorkersOnePs_reaches85PercentTestAccuracy(Consistency consistency) throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    long t0 = System.nanoTime();
    MultiLayerNetwork net = (MultiLayerNetwork) Dl4jTrainer.train(spark, spec, train,
        Dl4jTrainer.Settings.of(mlp(), "features", "label", consistency, 3, 64, 7));
    double seconds = (System.nanoTime() - t0) / 1e9;
    INDArray predicted = net.output(testX).argMax(1);
    int correct = 0;
    for (int i = 0; i < testY.length; i++) {
      if (predicted.getInt(i) == (int) testY[i]) {
        correct++;
      }
    }
    double accuracy = correct / (double) testY.length;
    System.out.printf("Fashion-MNIST %s: test accuracy %.4f after 3 epochs in %.1f s%n", consistency, accuracy, seconds);
    assertTrue(accuracy >= 0.85, consistency + ": test accuracy " + accuracy);
  }
}
