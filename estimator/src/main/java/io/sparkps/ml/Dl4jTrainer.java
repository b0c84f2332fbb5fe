package io.sparkps.ml;

import io.sparkps.ps.Consistency;
import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TrainingCluster;
import io.sparkps.spark.TrainingJob;
import java.io.Serializable;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Trains a DL4J network on a DataFrame with a SparkPS cluster: every worker builds the network
 * from its JSON, trains on its partition against the shared variables, and the chief returns the
 * final parameters. The Spark ML Estimator (issue 4) wraps this.
 */
public final class Dl4jTrainer {
  /**
   * What to train and how.
   *
   * @param networkJson the {@code MultiLayerConfiguration} as JSON
   * @param featuresCol the features column (vector or array of numbers)
   * @param labelCol the label column (class index)
   * @param consistency ASYNC, SYNC or SSP
   * @param staleness SSP's bound
   * @param epochs passes over the data
   * @param batchSize examples per minibatch and worker
   * @param seed shuffling seed
   */
  public record Settings(String networkJson, String featuresCol, String labelCol, Consistency consistency,
      int staleness, int epochs, int batchSize, long seed) implements Serializable {}

  private Dl4jTrainer() {}

  /** Starts training; the job's result is the chief's final parameters (and the others' null). */
  public static TrainingJob<float[]> trainAsync(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s) {
    return trainAsync(spark, spec, data, s, null);
  }

  /** {@link #trainAsync} with an evaluator (the spec must ask for one) when {@code evaluator} is not null. */
  static TrainingJob<float[]> trainAsync(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s,
      EvalWorker evaluator) {
    MultiLayerNetwork probe = network(s.networkJson());
    int inputs = (int) probe.layerInputSize(0);
    int classes = (int) probe.layerSize(probe.getnLayers() - 1);
    long rows = data.count();
    if (rows == 0) {
      throw new IllegalArgumentException("the DataFrame is empty: there is nothing to train on");
    }
    int stepsPerEpoch = (int) Math.max(1, rows / ((long) spec.numWorkers() * s.batchSize()));
    TrainWorker worker = new TrainWorker(s, inputs, classes, stepsPerEpoch);
    TrainingCluster cluster = new TrainingCluster(spark, spec);
    if (evaluator != null) {
      cluster.withEvaluator(evaluator);
    }
    return cluster.runAsync(data.select(s.featuresCol(), s.labelCol()), worker);
  }

  /** Trains and returns the network with the final parameters. */
  public static MultiLayerNetwork train(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s)
      throws InterruptedException {
    RunResult<float[]> result = trainAsync(spark, spec, data, s).join();
    MultiLayerNetwork net = network(s.networkJson());
    net.setParams(Nd4j.createFromArray(result.chief()).reshape(net.params().shape()));
    return net;
  }

  static MultiLayerNetwork network(String json) {
    MultiLayerNetwork net = new MultiLayerNetwork(MultiLayerConfiguration.fromJson(json));
    net.init();
    return net;
  }

  static ConsistencyGroup group(Settings s, int workers) {
    return switch (s.consistency()) {
      case SYNC -> ConsistencyGroup.sync("dl4j", workers);
      case SSP -> ConsistencyGroup.ssp("dl4j", workers, s.staleness());
      case ASYNC -> ConsistencyGroup.async("dl4j");
    };
  }
}
