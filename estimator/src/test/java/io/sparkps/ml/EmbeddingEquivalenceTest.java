package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.EmbeddingModels;
import io.sparkps.ml.embedding.EmbeddingStep;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
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
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * One SYNC worker through the estimator equals a single process that applies the same lazy SGD to
 * the same rows on the same minibatches: a reference written here with plain arrays (the table's
 * rows in a map, created from the ps's initial values; the dense step as DL4J's gradient at rate
 * 0.1 over the minibatch) scores every row within 1e-5 of the trained model.
 */
class EmbeddingEquivalenceTest {
  private static final double RATE = 0.1;
  private static final int BATCH = 32;
  private static final int ROWS = 320;
  private static final int EPOCHS = 2;
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(2, "embedding-equivalence-test");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static List<Row> rows() {
    Random random = new Random(3);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < ROWS; i++) {
      long user = random.nextInt(15);
      String item = "item-" + random.nextInt(25);
      double x = random.nextGaussian();
      double label = (user % 3 == 0 ? 1 : 0) ^ (x > 0.8 ? 1 : 0);
      rows.add(RowFactory.create(label, user, i % 7 == 0 ? null : item, x));
    }
    return rows;
  }

  private static String network() {
    return new NeuralNetConfiguration.Builder().seed(11).updater(new Sgd(RATE)).list()
        .layer(new DenseLayer.Builder().nIn(3 + 2 + 1).nOut(6).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(6).nOut(2)
            .activation(Activation.SOFTMAX).build()).build().toJson();
  }

  private static EmbeddingInputs inputs() {
    return new EmbeddingInputs(List.of(EmbeddingColumn.of("user", 3).withOptimizer("SGD", RATE).withInitScale(0.3),
        EmbeddingColumn.of("item", 2).withOptimizer("SGD", RATE).withInitScale(0.3)), List.of("x"));
  }

  @Test
  void oneSyncWorker_equalsASingleProcessWithTheSameLazySgd_toOneInAHundredThousand() throws Exception {
    StructType schema = new StructType().add("label", DataTypes.DoubleType).add("user", DataTypes.LongType)
        .add("item", DataTypes.StringType).add("x", DataTypes.DoubleType);
    Dataset<Row> data = spark.createDataFrame(rows(), schema).coalesce(1).cache(); // read in place, in order
    data.count();
    EmbeddingInputs inputs = inputs();
    Dl4jModel model = new Dl4jEstimator().setEmbeddingColumns(inputs.columns(), "x").setNetworkJson(network())
        .setNumWorkers(1).setNumPs(1).setBatchSize(BATCH).setEpochs(EPOCHS).setConsistency(
            io.sparkps.ps.spec.Consistency.SYNC).setSeed(0).fit(data);

    // The reference: the same rows, the same minibatches, plain arrays.
    CategoricalRows held = EmbeddingStep.read(rows().iterator(), inputs, true, 2, 0);
    Map<Long, float[]> table = initialRows(inputs, held);
    Net net = Net.fromJson(network());
    int steps = ROWS / BATCH;
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
      Iterator<int[]> batches = held.epoch(epoch, 0, steps, BATCH, 0);
      while (batches.hasNext()) {
        int[] batch = batches.next();
        net.setBatch(new DataSet(Nd4j.create(features(inputs, held, batch, table), new long[] {BATCH, 6}, 'c'),
            Nd4j.create(labels(held, batch), new long[] {BATCH, 2}, 'c')));
        float[] g = net.computeGradientAndInputGradient().castTo(DataType.FLOAT).dup('c').data().asFloat();
        net.params().subi(net.flatGradients().reshape(net.params().shape()).mul(RATE / BATCH)); // SGD, minibatch mean
        Map<Long, float[]> rowGradients = new HashMap<>();
        for (int i = 0; i < BATCH; i++) {
          for (int c = 0; c < 2; c++) {
            int dim = inputs.columns().get(c).dim();
            long key = held.keys()[held.start(batch[i], c)];
            float[] sum = rowGradients.computeIfAbsent(key, k -> new float[dim]);
            for (int d = 0; d < dim; d++) {
              sum[d] += g[i * 6 + inputs.offset(c) + d] / BATCH;
            }
          }
        }
        rowGradients.forEach((key, sum) -> {
          float[] row = table.get(key);
          for (int d = 0; d < row.length; d++) {
            row[d] -= (float) (RATE * sum[d]); // lazy SGD: only the rows the minibatch touched
          }
        });
      }
    }
    int[] all = java.util.stream.IntStream.range(0, ROWS).toArray();
    INDArray expected = net.output(Nd4j.create(features(inputs, held, all, table), new long[] {ROWS, 6}, 'c'));
    List<Row> scored = model.transform(data).select("probability").collectAsList();
    double worst = 0;
    for (int i = 0; i < ROWS; i++) {
      double p = ((org.apache.spark.ml.linalg.Vector) scored.get(i).get(0)).apply(1);
      worst = Math.max(worst, Math.abs(p - expected.getDouble(i, 1)));
    }
    System.out.printf("one SYNC worker against the single-process reference: largest difference in P(click) %.2e%n", worst);
    assertTrue(worst < 1e-5, "largest difference in P(click) over the " + ROWS + " rows: " + worst);
    double moved = 0;
    Net untrained = Net.fromJson(network());
    moved = Math.abs(untrained.output(Nd4j.create(features(inputs, held, all, initialRows(inputs, held)),
        new long[] {ROWS, 6}, 'c')).getDouble(0, 1) - expected.getDouble(0, 1));
    assertTrue(moved > 1e-3, "training moved the scores: " + moved);
  }

  /** Every key's first row as a fresh ps of the same table spec makes it. */
  private static Map<Long, float[]> initialRows(EmbeddingInputs inputs, CategoricalRows held) {
    PsToken token = PsToken.generate();
    ParameterServer server = ParameterServer.builder().setShardIndex(0).setToken(token)
        .optInProcess("equivalence-" + System.nanoTime()).build().start();
    Map<Long, float[]> rows = new HashMap<>();
    try (PsClient ps = PsClient.builder().setShards(List.of(server.address())).setToken(token).build()) {
      ps.createGroup(io.sparkps.ps.spec.ConsistencyGroup.async(EmbeddingModels.GROUP));
      for (int t = 0; t < inputs.tables().size(); t++) {
        EmbeddingTable table = ps.embeddingTable(inputs.tables().get(t).spec(EmbeddingModels.GROUP));
        int dim = inputs.tables().get(t).settings().dim();
        for (int c : inputs.tables().get(t).columns()) {
          for (int r = 0; r < held.size(); r++) {
            long key = held.keys()[held.start(r, c)];
            float[] row = table.pull(new long[] {key}, 0);
            rows.putIfAbsent(key, java.util.Arrays.copyOf(row, dim));
          }
        }
      }
    } finally {
      server.close();
    }
    return rows;
  }

  private static float[] features(EmbeddingInputs inputs, CategoricalRows held, int[] batch, Map<Long, float[]> table) {
    float[] x = new float[batch.length * 6];
    for (int i = 0; i < batch.length; i++) {
      for (int c = 0; c < 2; c++) {
        float[] row = table.get(held.keys()[held.start(batch[i], c)]);
        System.arraycopy(row, 0, x, i * 6 + inputs.offset(c), row.length);
      }
      x[i * 6 + 5] = held.value(batch[i], 0);
    }
    return x;
  }

  private static float[] labels(CategoricalRows held, int[] batch) {
    float[] y = new float[batch.length * 2];
    for (int i = 0; i < batch.length; i++) {
      System.arraycopy(held.labels(), batch[i] * 2, y, i * 2, 2);
    }
    return y;
  }
}
