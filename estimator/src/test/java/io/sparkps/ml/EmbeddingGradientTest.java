package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.EmbeddingModels;
import io.sparkps.ml.embedding.EmbeddingStep;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.PsToken;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The row gradients an embedding model pushes are the mean loss's gradients by the table rows:
 * checked against finite differences taken through the ps itself (a row moved by +-eps, the loss
 * recomputed), for a summed single-id column, a mean-pooled array column with repeated ids and a
 * column sharing its table, on real in-process shards.
 */
class EmbeddingGradientTest {
  private final List<ParameterServer> servers = new ArrayList<>();
  private PsClient ps;

  @BeforeEach
  void start() {
    PsToken token = PsToken.generate();
    for (int i = 0; i < 2; i++) {
      servers.add(ParameterServer.builder().setShardIndex(i).setToken(token).optInProcess("grad-test-" + i + "-"
          + System.nanoTime()).build().start());
    }
    ps = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList()).setToken(token).build();
    ps.createGroup(ConsistencyGroup.async(EmbeddingModels.GROUP));
  }

  @AfterEach
  void stop() {
    ps.close();
    servers.forEach(ParameterServer::close);
  }

  @Test
  void pushedRowGradients_equalFiniteDifferencesOfTheMeanLoss() {
    // "a" and "c" share a table (same settings); "b" is an array column, mean-pooled, in its own (dim 2).
    EmbeddingInputs inputs = new EmbeddingInputs(List.of(
        EmbeddingColumn.of("a", 3).withOptimizer("SGD", 1).withInitScale(0.5),
        EmbeddingColumn.of("b", 2).withOptimizer("SGD", 1).withInitScale(0.5).withPooling(EmbeddingColumn.Pooling.MEAN),
        EmbeddingColumn.of("c", 3).withOptimizer("SGD", 1).withInitScale(0.5)), List.of("x"));
    assertEquals(2, inputs.tables().size(), "a and c share a table");
    TableLookup.Pulled pulled = checkAgainstFiniteDifferences(inputs);
    assertEquals(6, pulled.unique(0).length, "a's u1, u2 and missing row, c's 5, 6 and missing row: none shared");
    assertEquals(4, pulled.unique(1).length, "b's 7, 8, 9 and its missing row");
  }

  @Test
  void withTheFactorizationTerm_theRowGradientsCarryItsShare() {
    EmbeddingInputs inputs = new EmbeddingInputs(List.of(
        EmbeddingColumn.of("a", 2).withOptimizer("SGD", 1).withInitScale(0.8),
        EmbeddingColumn.of("b", 2).withOptimizer("SGD", 1).withInitScale(0.8).withPooling(EmbeddingColumn.Pooling.MEAN),
        EmbeddingColumn.of("c", 2).withOptimizer("SGD", 1).withInitScale(0.8)), List.of("x"), true);
    assertEquals(2 * 3 + 1 + 1, inputs.width(), "the term is the last input");
    checkAgainstFiniteDifferences(inputs);
  }

  @Test
  void wideAndDeepGraph_theWideRowsAndTheDeepRowsGetTheirGradients() {
    // DeepFM as a ComputationGraph: the wide weights and the factorization term skip the hidden layer.
    EmbeddingInputs inputs = new EmbeddingInputs(List.of(
        EmbeddingColumn.of("a", 2).withOptimizer("SGD", 1).withInitScale(0.8),
        EmbeddingColumn.of("b", 2).withOptimizer("SGD", 1).withInitScale(0.8).withPooling(EmbeddingColumn.Pooling.MEAN),
        EmbeddingColumn.of("c", 2).withOptimizer("SGD", 1).withInitScale(0.8)), List.of("x"), true, true);
    assertEquals(2 * 3 + 1 + 3 + 1, inputs.width(), "embeddings, x, a weight per column, the term");
    assertEquals(2, inputs.tables().size(), "the columns' table and the wide one");
    Net graph = Net.fromJson(io.sparkps.ml.embedding.WideAndDeep.network(inputs, new int[] {5}, 2, 4, 1e-3).toJson());
    assertEquals(inputs.width(), graph.inputWidth(), "read from the graph's subsets");
    TableLookup.Pulled pulled = checkAgainstFiniteDifferences(inputs, graph);
    assertEquals(pulled.unique(0).length, pulled.unique(1).length, "the wide table holds a weight per key");
  }

  /**
   * Pulls a minibatch of four rows, computes the network's input gradient and pushes it through the
   * lookup (SGD at rate 1, so a row's change is its gradient), and compares every row's change with
   * central differences of the mean loss, each row moved through the ps itself.
   */
  private TableLookup.Pulled checkAgainstFiniteDifferences(EmbeddingInputs inputs) {
    return checkAgainstFiniteDifferences(inputs, Net.fromJson(new NeuralNetConfiguration.Builder().seed(4).list()
        .layer(new DenseLayer.Builder().nIn(inputs.width()).nOut(5).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(5).nOut(2).activation(Activation.SOFTMAX)
            .build()).build().toJson()));
  }

  private TableLookup.Pulled checkAgainstFiniteDifferences(EmbeddingInputs inputs, Net net) {
    List<Row> data = List.of(
        RowFactory.create(1.0, "u1", seq(7L, 7L, 8L), 5L, 0.5),
        RowFactory.create(0.0, "u2", seq(8L), 5L, -1.0),
        RowFactory.create(1.0, "u1", seq(), null, 2.0),
        RowFactory.create(0.0, null, seq(9L, 7L), 6L, 0.0));
    CategoricalRows rows = EmbeddingStep.read(data.iterator(), inputs, true, 2, 0);
    TableLookup lookup = new TableLookup(inputs, ps, EmbeddingModels.GROUP);
    int[] batch = {0, 1, 2, 3};
    long pulls = served("PullEmbeddings");
    TableLookup.Pulled pulled = lookup.pull(rows, batch, 0, true);
    assertEquals(servers.size(), served("PullEmbeddings") - pulls, "every table's rows in one call per ps");
    net.setBatch(dataSet(lookup, rows, batch));
    float[] inputGradient = net.computeGradientAndInputGradient().castTo(DataType.FLOAT).dup('c').data().asFloat();

    // Finite differences through the ps: each key's row element moved by +-eps (SGD at rate 1: a push of -g adds g).
    int tableCount = inputs.tables().size();
    EmbeddingTable[] tables = new EmbeddingTable[tableCount];
    for (int t = 0; t < tableCount; t++) {
      tables[t] = ps.embeddingTable(inputs.tables().get(t).spec(EmbeddingModels.GROUP));
    }
    double eps = 1e-2;
    float[][] numeric = new float[tableCount][];
    float[][] before = new float[tableCount][];
    for (int t = 0; t < tableCount; t++) {
      long[] keys = pulled.unique(t);
      int dim = inputs.tables().get(t).settings().dim();
      numeric[t] = new float[keys.length * dim];
      for (int k = 0; k < keys.length; k++) {
        for (int d = 0; d < dim; d++) {
          float[] move = new float[dim];
          move[d] = (float) -eps;
          tables[t].push(new long[] {keys[k]}, move, 0);
          double up = net.score(dataSet(lookup, rows, batch));
          move[d] = (float) (2 * eps);
          tables[t].push(new long[] {keys[k]}, move, 0);
          double down = net.score(dataSet(lookup, rows, batch));
          move[d] = (float) -eps;
          tables[t].push(new long[] {keys[k]}, move, 0); // back where it was
          numeric[t][k * dim + d] = (float) ((up - down) / (2 * eps));
        }
      }
      before[t] = tables[t].read(keys);
    }
    // What the lookup pushes for the mean loss (scale 1/4), read back as the rows' change.
    long pushes = served("PushEmbeddings");
    lookup.push(pulled, inputGradient, 1.0 / batch.length, 1);
    assertEquals(servers.size(), served("PushEmbeddings") - pushes, "every table's gradients in one call per ps");
    int checked = 0;
    for (int t = 0; t < tableCount; t++) {
      float[] after = tables[t].read(pulled.unique(t));
      for (int i = 0; i < after.length; i++) {
        double analytic = before[t][i] - after[i];
        assertEquals(numeric[t][i], analytic, 2e-3 + 0.02 * Math.abs(numeric[t][i]), "table " + t + " value " + i);
        checked += Math.abs(numeric[t][i]) > 1e-3 ? 1 : 0;
      }
    }
    assertTrue(checked > 12, checked + " non-zero gradient values checked");
    return pulled;
  }

  private long served(String method) {
    return servers.stream().mapToLong(s -> s.callsServed().getOrDefault(method, 0L)).sum();
  }

  private static DataSet dataSet(TableLookup lookup, CategoricalRows rows, int[] batch) {
    float[] labels = new float[batch.length * 2];
    for (int i = 0; i < batch.length; i++) {
      System.arraycopy(rows.labels(), batch[i] * 2, labels, i * 2, 2);
    }
    float[] x = lookup.features(lookup.pull(rows, batch, 0, false));
    return new DataSet(Nd4j.create(x, new long[] {batch.length, x.length / batch.length}, 'c'),
        Nd4j.create(labels, new long[] {batch.length, 2}, 'c'));
  }

  private static scala.collection.Seq<Object> seq(Object... ids) {
    return scala.collection.JavaConverters.asScalaBuffer(java.util.Arrays.asList(ids)).toSeq();
  }
}
