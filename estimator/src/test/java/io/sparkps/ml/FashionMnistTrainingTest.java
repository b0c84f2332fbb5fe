package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.ps.spec.Consistency;
import java.io.IOException;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A 784-256-10 MLP on Fashion-MNIST with 2 workers and 1 ps reaches 85% test accuracy (ASYNC 84%). */
class FashionMnistTrainingTest {
  private static SparkSession spark;
  private static Dataset<Row> train;
  private static FashionMnistTestSet test;

  @BeforeAll
  static void start() throws IOException {
    spark = io.sparkps.ml.LocalSpark.start(4, "fashion-mnist");
    train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).cache();
    test = FashionMnistTestSet.read();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @ParameterizedTest
  @EnumSource(value = Consistency.class, names = {"SYNC", "ASYNC"})
  void mlp_twoWorkersOnePs_reaches85PercentTestAccuracy(Consistency consistency) throws Exception {
    TrainingConfig config = TrainingConfig.builder().optNumPs(1).optNumWorkers(2).optConsistency(consistency)
        .optEpochs(3).optBatchSize(64).optSeed(7).build();
    long t0 = System.nanoTime();
    MultiLayerNetwork net = (MultiLayerNetwork) Dl4jTrainer.train(spark, train, FashionMnistTestSet.mlp(), config);
    double seconds = (System.nanoTime() - t0) / 1e9;
    double accuracy = test.accuracy(net);
    System.out.printf("Fashion-MNIST %s: test accuracy %.4f after 3 epochs in %.1f s%n", consistency, accuracy, seconds);
    // SYNC repeats itself (0.8506 every run); ASYNC's result depends on how the two workers
    // interleave (0.845 to 0.869 measured on this machine), so its bar is a point lower.
    double bar = consistency == Consistency.SYNC ? 0.85 : 0.84;
    assertTrue(accuracy >= bar, consistency + ": test accuracy " + accuracy + " (needs " + bar + ")");
  }
}
