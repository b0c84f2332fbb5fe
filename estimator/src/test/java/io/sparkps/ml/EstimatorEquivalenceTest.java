package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.training.OverlappedTransfers;
import io.sparkps.ps.PsClient;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
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
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.updater.BaseMultiLayerUpdater;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * {@link Dl4jEstimator#fit} against DL4J on the same minibatches, through the whole chain (a
 * DataFrame, the barrier stage, 2 ps tasks with the first layer's weights split over both, gRPC
 * and the bulk sockets, same-JVM transfers off): one SYNC worker equals {@code MultiLayerNetwork.fit};
 * two SYNC workers equal DL4J's updater applied to the mean of their gradients at each step.
 */
class EstimatorEquivalenceTest {
  private static final int IN = 784;
  private static final int HIDDEN = 96; // 784 x 96 floats = 294 KiB: split over the 2 ps (256 KiB and up)
  private static final int CLASSES = 3;
  private static final int BATCH = 32;
  private static final int STEPS = 6;
  private static final long SEED = 17;
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    System.setProperty(PsClient.SAME_JVM_PROPERTY, "false");
    spark = LocalSpark.start(4, "estimator-equivalence");
  }

  @AfterAll
  static void stop() {
    spark.stop();
    System.clearProperty(PsClient.SAME_JVM_PROPERTY);
  }

  private static MultiLayerConfiguration mlp() {
    return new NeuralNetConfiguration.Builder().seed(12).dataType(DataType.FLOAT).updater(new Adam(0.01)).l2(1e-3)
        .list()
        .layer(new DenseLayer.Builder().nIn(IN).nOut(HIDDEN).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(HIDDEN).nOut(CLASSES)
            .activation(Activation.SOFTMAX).build())
        .build();
  }

  /** A cached DataFrame whose partition p holds {@code sizes[p]} rows drawn from Random(p). */
  private static Dataset<Row> data(int... sizes) {
    List<Row> rows = new ArrayList<>();
    List<Integer> partitionOf = new ArrayList<>();
    for (int p = 0; p < sizes.length; p++) {
      Random random = new Random(p);
      for (int i = 0; i < sizes[p]; i++) {
        double[] x = new double[IN];
        int label = random.nextInt(CLASSES);
        for (int j = 0; j < IN; j++) {
          x[j] = random.nextDouble() + (j % CLASSES == label ? 0.3 : 0);
        }
        rows.add(RowFactory.create(Vectors.dense(x), (double) label));
        partitionOf.add(p);
      }
    }
    StructType schema = new StructType().add("features", SQLDataTypes.VectorType()).add("label", DataTypes.DoubleType);
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    // One slice per partition, in order: parallelize cuts a list into equal slices, so build them one by one.
    org.apache.spark.api.java.JavaRDD<Row> rdd = null;
    int from = 0;
    for (int size : sizes) {
      org.apache.spark.api.java.JavaRDD<Row> part = jsc.parallelize(rows.subList(from, from + size), 1);
      rdd = rdd == null ? part : rdd.union(part);
      from += size;
    }
    Dataset<Row> df = spark.createDataFrame(rdd, schema).cache();
    assertEquals(sizes.length, df.javaRDD().getNumPartitions());
    df.count();
    return df;
  }

  /** The minibatches worker {@code index} trains on in epoch 0: its partition, shuffled with the run's seed. */
  private static List<DataSet> batchesOf(Dataset<Row> df, int index, int steps) {
    List<Row> partition = df.javaRDD().glom().collect().get(index);
    try (Minibatches m = Minibatches.of(partition.iterator(), index, "features", "label", IN, CLASSES)) {
      List<DataSet> out = new ArrayList<>();
      Iterator<DataSet> it = m.epoch(0, 0, steps, BATCH, SEED + index);
      for (int i = 0; i < steps; i++) {
        DataSet b = it.next();
        out.add(new DataSet(b.getFeatures().dup(), b.getLabels().dup()));
      }
      return out;
    }
  }

  private static MultiLayerNetwork fit(Dataset<Row> df, int workers) {
    return fit(df, workers, STEPS, 1);
  }

  private static MultiLayerNetwork fit(Dataset<Row> df, int workers, int minibatches, int accumulation) {
    Dl4jModel model = new Dl4jEstimator().setNetworkJson(mlp().toJson()).setNumWorkers(workers).setNumPs(2)
        .setConsistency(io.sparkps.ps.spec.Consistency.SYNC).setBatchSize(BATCH).setMaxSteps(minibatches).setSeed(SEED)
        .setGradientAccumulation(accumulation).fit(df);
    return (MultiLayerNetwork) model.network();
  }

  private static void assertClose(MultiLayerNetwork expected, MultiLayerNetwork actual) {
    double diff = actual.params().sub(expected.params()).amaxNumber().doubleValue();
    assertTrue(diff <= 1e-5, "max |sparkps - dl4j| = " + diff);
    MultiLayerNetwork initial = new MultiLayerNetwork(mlp());
    initial.init();
    double moved = actual.params().sub(initial.params()).amaxNumber().doubleValue();
    assertTrue(moved > 1e-3, "training moved the parameters by " + moved);
  }

  @Test
  void oneWorker_twoPs_equalsMultiLayerNetworkFit_onTheSameMinibatches() {
    MultiLayerNetwork probe = new MultiLayerNetwork(mlp());
    probe.init();
    java.util.Map<String, List<io.sparkps.ps.Placement.Slice>> placed = new io.sparkps.ps.Placement(2,
        io.sparkps.ps.Placement.DEFAULT_SPLIT_BYTES).place(NetworkVariables.of(Net.of(probe), "g", false).specs());
    assertEquals(2, placed.get("0_W").size(), "the first layer's weights are split over both ps: " + placed);
    Dataset<Row> df = data(256);
    MultiLayerNetwork actual = fit(df, 1);
    MultiLayerNetwork reference = new MultiLayerNetwork(mlp());
    reference.init();
    for (DataSet batch : batchesOf(df, 0, STEPS)) {
      reference.fit(batch);
    }
    assertClose(reference, actual);
  }

  @Test
  void oneWorker_accumulatingTwoMinibatchesPerStep_equalsFitOnMinibatchesTwiceAsLarge() {
    Dataset<Row> df = data(256);
    int minibatches = 5; // steps of minibatches 0-1, 2-3 and, the last, 4 alone
    MultiLayerNetwork actual = fit(df, 1, minibatches, 2);
    List<DataSet> batches = batchesOf(df, 0, minibatches);
    MultiLayerNetwork reference = new MultiLayerNetwork(mlp());
    reference.init();
    reference.fit(DataSet.merge(batches.subList(0, 2)));
    reference.fit(DataSet.merge(batches.subList(2, 4)));
    reference.fit(batches.get(4));
    assertClose(reference, actual);
    // Pushing each minibatch (5 steps) lands far from it: the accumulation is what made them equal.
    MultiLayerNetwork everyMinibatch = new MultiLayerNetwork(mlp());
    everyMinibatch.init();
    batches.forEach(everyMinibatch::fit);
    assertTrue(actual.params().sub(everyMinibatch.params()).amaxNumber().doubleValue() > 1e-3,
        "the run differs from one step per minibatch");
  }

  /** With the transfers overlapping the passes layer by layer ({@link OverlappedTransfers}; off by default here). */
  @Test
  void twoWorkersSync_equalDl4jsUpdaterOnTheMeanOfTheirGradients() {
    // Partition 0 is the larger: the placement gives it to worker 0 (largest first), partition 1 to worker 1.
    Dataset<Row> df = data(256, 250);
    String overlap = io.sparkps.spark.SparkPsConf.TRAIN_OVERLAP_TRANSFERS.key();
    spark.conf().set(overlap, "true");
    MultiLayerNetwork actual;
    try {
      actual = fit(df, 2);
    } finally {
      spark.conf().unset(overlap);
    }
    List<DataSet> worker0 = batchesOf(df, 0, STEPS);
    List<DataSet> worker1 = batchesOf(df, 1, STEPS);
    MultiLayerNetwork reference = new MultiLayerNetwork(mlp());
    reference.init();
    for (int step = 0; step < STEPS; step++) {
      INDArray g0 = gradient(reference, worker0.get(step));
      INDArray g1 = gradient(reference, worker1.get(step));
      reference.getFlattenedGradients().assign(g0.add(g1).divi(2));
      ((BaseMultiLayerUpdater<?>) reference.getUpdater(true)).update(reference.gradient(), step, 0, BATCH,
          LayerWorkspaceMgr.noWorkspaces());
      reference.params().subi(reference.getFlattenedGradients().reshape(reference.params().shape()));
    }
    assertClose(reference, actual);
    // Had one worker's gradients been dropped, the parameters would differ by far more than 1e-5.
    MultiLayerNetwork oneWorker = new MultiLayerNetwork(mlp());
    oneWorker.init();
    worker0.forEach(oneWorker::fit);
    assertTrue(actual.params().sub(oneWorker.params()).amaxNumber().doubleValue() > 1e-3,
        "the run differs from worker 0 alone");
  }

  /** The gradient of {@code batch} at the network's current parameters (a copy). */
  private static INDArray gradient(MultiLayerNetwork net, DataSet batch) {
    net.setInput(batch.getFeatures());
    net.setLabels(batch.getLabels());
    net.computeGradientAndScore();
    return net.getFlattenedGradients().dup();
  }
}
