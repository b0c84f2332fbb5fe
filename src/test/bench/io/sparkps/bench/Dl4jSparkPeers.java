package io.sparkps.bench;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.spark.api.RDDTrainingApproach;
import org.deeplearning4j.spark.api.Repartition;
import org.deeplearning4j.spark.impl.multilayer.SparkDl4jMultiLayer;
import org.deeplearning4j.spark.impl.paramavg.ParameterAveragingTrainingMaster;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The dl4j-spark peers of the benchmarks, each set up as its users would: parameter averaging
 * ({@code ParameterAveragingTrainingMaster}) and gradient sharing ({@code SharedTrainingMaster}),
 * 2 workers, fed from the cached DataFrame's partitions cut into minibatches in their tasks.
 */
final class Dl4jSparkPeers {
  /** A fitted network and the seconds its {@code fit} took, on {@code examples} examples. */
  record Fitted(MultiLayerNetwork net, double seconds, int examples) {}

  private Dl4jSparkPeers() {}

  /** dl4j-spark's parameter averaging with 2 workers, {@code batch} examples per worker minibatch. */
  static ParameterAveragingTrainingMaster averagingMaster(int batch) {
    return new ParameterAveragingTrainingMaster.Builder(2, batch).batchSizePerWorker(batch).averagingFrequency(5)
        .workerPrefetchNumBatches(2).rngSeed(7).rddTrainingApproach(RDDTrainingApproach.Direct)
        .repartionData(Repartition.Never).storageLevel(org.apache.spark.storage.StorageLevel.MEMORY_ONLY()).build();
  }


  /** A dl4j-spark trainer on the cached DataFrame's minibatches, timed around its {@code fit}. */
  static Fitted fit(SparkSession spark, Dataset<Row> train, MultiLayerConfiguration conf, int examples, int batch,
      org.deeplearning4j.spark.api.TrainingMaster<?, ?> master) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    int perPartition = examples / (2 * batch) * batch;
    JavaRDD<DataSet> rdd = minibatchRdd(train, perPartition, batch);
    SparkDl4jMultiLayer sparkNet = new SparkDl4jMultiLayer(jsc, conf.clone(), master);
    long t0 = System.nanoTime();
    MultiLayerNetwork net = sparkNet.fit(rdd);
    return new Fitted(net, (System.nanoTime() - t0) / 1e9, 2 * perPartition);
  }

  /** The cached DataFrame's partitions cut into minibatches of {@code batch} rows, {@code perPartition} rows each. */
  static JavaRDD<DataSet> minibatchRdd(Dataset<Row> train, int perPartition, int batch) {
    return train.javaRDD().mapPartitions(rows -> {
      List<DataSet> out = new ArrayList<>();
      float[] xs = new float[batch * 784];
      float[] labels = new float[batch];
      int n = 0;
      int taken = 0;
      while (rows.hasNext() && taken < perPartition) {
        Row r = rows.next();
        double[] v = ((org.apache.spark.ml.linalg.Vector) r.get(0)).toArray();
        for (int j = 0; j < 784; j++) {
          xs[n * 784 + j] = (float) v[j];
        }
        labels[n++] = (float) r.getDouble(1);
        taken++;
        if (n == batch) {
          out.add(new DataSet(Nd4j.create(xs.clone(), new long[] {batch, 784}, 'c'), BenchSupport.oneHot(labels, 0, batch)));
          n = 0;
        }
      }
      return out.iterator();
    });
  }


  /**
   * dl4j-spark's SharedTrainingMaster (dl4j-spark-parameterserver): gradient sharing with
   * adaptive threshold encoding over Aeron, the Spark trainer DL4J recommends over parameter
   * averaging. Fed from the same cached DataFrame as the others, 2 partitions, one trainer thread
   * per node ({@code workersPerNode(1)}); the residuals are kept per worker, as DL4J does. With
   * {@code workersPerNode(2)} (one trainer per core of this machine) the run of 2026-11-30 hung for
   * minutes in {@code ParallelWrapper.fit} at {@code DefaultTrainer.waitTillRunning}, its Spark
   * tasks waiting in {@code BlockingObserver.waitTillDone}, and was killed. Its controller listens
   * on loopback.
   */
  static org.deeplearning4j.spark.parameterserver.training.SharedTrainingMaster sharingMaster(int batch) {
    // DL4J M2's AeronUdpTransport sets Aeron's client liveness timeout to 30 s, above Aeron 1.32's
    // default publication unblock timeout (15 s), and the media driver refuses that pair at launch
    // ("publicationUnblockTimeoutNs=15000000000 <= clientLivenessTimeoutNs=30000000000").
    System.setProperty("aeron.publication.unblock.timeout", String.valueOf(60_000_000_000L));
    org.nd4j.parameterserver.distributed.conf.VoidConfiguration voidConf =
        org.nd4j.parameterserver.distributed.conf.VoidConfiguration.builder().unicastPort(sharingPort())
            .networkMask("127.0.0.0/8").controllerAddress("127.0.0.1").build();
    return new org.deeplearning4j.spark.parameterserver.training.SharedTrainingMaster.Builder(voidConf, batch)
        .batchSizePerWorker(batch).workersPerNode(1).rngSeed(7).collectTrainingStats(false)
        .rddTrainingApproach(RDDTrainingApproach.Direct).repartitionData(Repartition.Never)
        .storageLevel(org.apache.spark.storage.StorageLevel.MEMORY_ONLY()).build();
  }

  /** A free port for the gradient-sharing controller (Aeron's unicast UDP port). */
  static int sharingPort() {
    try (java.net.DatagramSocket socket = new java.net.DatagramSocket(0)) {
      return socket.getLocalPort();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
