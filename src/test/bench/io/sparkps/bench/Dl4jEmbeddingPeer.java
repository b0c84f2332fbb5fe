package io.sparkps.bench;

import io.sparkps.ml.datasets.ClickThroughData;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.distribution.UniformDistribution;
import org.deeplearning4j.nn.conf.graph.MergeVertex;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.EmbeddingLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.weights.WeightInitDistribution;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.MultiDataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.AdaGrad;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The single-process peer of the click-through benchmark: DL4J's own embedding model, as a user
 * would write it without a parameter server. The rows are collected to the driver; each field's ids
 * seen at least {@code minCount} times get an index of their own (rarer and unseen ids share index
 * 0, missing values index 1, as SparkPS's default and missing rows); a ComputationGraph with an
 * {@code EmbeddingLayer} per field (AdaGrad, rows in +-0.01, no bias, as SparkPS's tables: AdaGrad
 * leaves a row whose gradient is 0 where it is, so it is lazy too), merged with the numeric values
 * into the same dense layers (Adam), fitted on minibatches of the rows shuffled anew each epoch
 * (as SparkPS's workers draw theirs), with every core's threads for ND4J's ops.
 */
final class Dl4jEmbeddingPeer {
  private Dl4jEmbeddingPeer() {}

  /** The held-out AUC, the fit's seconds and the examples it went through. */
  record Fitted(double auc, double seconds, long examples) {}

  static Fitted fit(ClickThroughData data, Dataset<Row> train, Dataset<Row> test, int dim, int minCount,
      double tableRate, int[] hidden, double rate, int batch, int epochs, long seed) {
    List<String> fields = data.categoricalColumns();
    List<String> numeric = data.numericColumns();
    List<Row> rows = train.select(columns(fields, numeric)).collectAsList();
    List<Map<Long, Integer>> vocab = vocabularies(rows, fields.size(), numeric.size(), minCount);
    ComputationGraph graph = new ComputationGraph(network(vocab, dim, numeric.size(), tableRate, hidden, rate, seed));
    graph.init();
    // Every epoch's minibatches made before the clock starts, each epoch from the rows shuffled anew.
    Random order = new Random(seed);
    List<List<MultiDataSet>> epochBatches = new ArrayList<>();
    List<Row> shuffled = new ArrayList<>(rows);
    for (int e = 0; e < epochs; e++) {
      java.util.Collections.shuffle(shuffled, order);
      List<MultiDataSet> batches = new ArrayList<>();
      for (int from = 0; from < shuffled.size(); from += batch) {
        batches.add(features(shuffled.subList(from, Math.min(shuffled.size(), from + batch)), vocab, numeric.size()));
      }
      epochBatches.add(batches);
    }
    int cores = Runtime.getRuntime().availableProcessors();
    threads(cores);
    long start = System.nanoTime();
    for (List<MultiDataSet> batches : epochBatches) {
      for (MultiDataSet b : batches) {
        graph.fit(b);
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    List<Row> held = test.select(columns(fields, numeric)).collectAsList();
    MultiDataSet x = features(held, vocab, numeric.size());
    INDArray p = graph.outputSingle(false, x.getFeatures());
    threads(1);
    // scored as the other trainers are: Spark's exact ROC AUC of the click probability
    List<Row> scored = new ArrayList<>();
    for (int i = 0; i < held.size(); i++) {
      scored.add(org.apache.spark.sql.RowFactory.create(held.get(i).getDouble(0), p.getDouble(i, 1)));
    }
    Dataset<Row> frame = train.sparkSession().createDataFrame(scored, new org.apache.spark.sql.types.StructType()
        .add("label", "double").add("score", "double"));
    double auc = new org.apache.spark.ml.evaluation.BinaryClassificationEvaluator().setRawPredictionCol("score")
        .setNumBins(0).evaluate(frame);
    return new Fitted(auc, seconds, (long) rows.size() * epochs);
  }

  private static void threads(int n) {
    org.nd4j.nativeblas.NativeOpsHolder.getInstance().getDeviceNativeOps().setOmpNumThreads(n);
    Nd4j.getEnvironment().setMaxMasterThreads(n);
  }

  private static org.apache.spark.sql.Column[] columns(List<String> fields, List<String> numeric) {
    List<org.apache.spark.sql.Column> out = new ArrayList<>(List.of(org.apache.spark.sql.functions.col("label")));
    numeric.forEach(c -> out.add(org.apache.spark.sql.functions.col(c)));
    fields.forEach(c -> out.add(org.apache.spark.sql.functions.col(c)));
    return out.toArray(new org.apache.spark.sql.Column[0]);
  }

  /** Per field: each id seen at least {@code minCount} times, and its index (from 2). */
  private static List<Map<Long, Integer>> vocabularies(List<Row> rows, int fields, int numeric, int minCount) {
    List<Map<Long, Integer>> out = new ArrayList<>();
    for (int f = 0; f < fields; f++) {
      Map<Long, Integer> counts = new HashMap<>();
      for (Row r : rows) {
        if (!r.isNullAt(1 + numeric + f)) {
          counts.merge(r.getLong(1 + numeric + f), 1, Integer::sum);
        }
      }
      Map<Long, Integer> index = new HashMap<>();
      counts.entrySet().stream().filter(e -> e.getValue() >= minCount).map(Map.Entry::getKey).sorted()
          .forEach(id -> index.put(id, 2 + index.size()));
      out.add(index);
    }
    return out;
  }

  private static ComputationGraphConfiguration network(List<Map<Long, Integer>> vocab, int dim, int numeric,
      double tableRate, int[] hidden, double rate, long seed) {
    ComputationGraphConfiguration.GraphBuilder g = new NeuralNetConfiguration.Builder().seed(seed)
        .dataType(DataType.FLOAT).updater(new Adam(rate)).graphBuilder();
    String[] merged = new String[vocab.size() + 1];
    for (int f = 0; f < vocab.size(); f++) {
      g.addInputs("in-" + f);
      g.addLayer("emb-" + f, new EmbeddingLayer.Builder().nIn(2 + vocab.get(f).size()).nOut(dim).hasBias(false)
          .updater(new AdaGrad(tableRate)).weightInit(new WeightInitDistribution(new UniformDistribution(-0.01, 0.01)))
          .build(), "in-" + f);
      merged[f] = "emb-" + f;
    }
    g.addInputs("numeric");
    merged[vocab.size()] = "numeric";
    g.addVertex("merge", new MergeVertex(), merged);
    String last = "merge";
    long in = (long) vocab.size() * dim + numeric;
    for (int i = 0; i < hidden.length; i++) {
      g.addLayer("dense-" + i, new DenseLayer.Builder().nIn(in).nOut(hidden[i]).activation(Activation.RELU).build(),
          last);
      last = "dense-" + i;
      in = hidden[i];
    }
    return g.addLayer("output", new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(2)
        .activation(Activation.SOFTMAX).build(), last).setOutputs("output").build();
  }

  /** The rows as the graph's inputs: an index per field (0 rare or unseen, 1 missing), the numeric values. */
  private static MultiDataSet features(List<Row> rows, List<Map<Long, Integer>> vocab, int numeric) {
    int n = rows.size();
    INDArray[] in = new INDArray[vocab.size() + 1];
    float[][] ids = new float[vocab.size()][n];
    float[] values = new float[n * numeric];
    float[] labels = new float[n * 2];
    for (int i = 0; i < n; i++) {
      Row r = rows.get(i);
      labels[i * 2 + (r.getDouble(0) > 0.5 ? 1 : 0)] = 1;
      for (int j = 0; j < numeric; j++) {
        values[i * numeric + j] = (float) r.getDouble(1 + j);
      }
      for (int f = 0; f < vocab.size(); f++) {
        int at = 1 + numeric + f;
        ids[f][i] = r.isNullAt(at) ? 1 : vocab.get(f).getOrDefault(r.getLong(at), 0);
      }
    }
    for (int f = 0; f < vocab.size(); f++) {
      in[f] = Nd4j.create(ids[f], new long[] {n, 1}, 'c');
    }
    in[vocab.size()] = Nd4j.create(values, new long[] {n, numeric}, 'c');
    return new MultiDataSet(in, new INDArray[] {Nd4j.create(labels, new long[] {n, 2}, 'c')});
  }
}
