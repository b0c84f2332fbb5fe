package io.sparkps.ml;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.EvaluatorContext;
import io.sparkps.spark.EvaluatorFunction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.nd4j.evaluation.classification.Evaluation;
import org.nd4j.evaluation.regression.RegressionEvaluation;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The evaluator of a fit: whenever the variables' version moves (at most once per
 * {@code everyMillis}), reads them into its own copy of the network and reports, on the held-out
 * set, accuracy, macro precision/recall/F1 and loss for a classifier, or MSE, MAE, R2 and loss for
 * a regressor (averaged over the outputs). Training never waits for it.
 *
 * <p>Deferred, it only copies the variables while training runs and scores the copies once
 * training has stopped, so that scoring takes no cores from training (on a shared machine, or for
 * a time-to-accuracy figure). Each report then carries {@code takenAtMillis}, the wall-clock time
 * the copy was read. The copies are held up to {@link #DEFERRED_BYTES}: when full, every second
 * one is dropped and the interval between copies doubles, so they still span the whole run.
 */
final class EvalWorker implements EvaluatorFunction {
  private static final long serialVersionUID = 1L;
  /** The held-out rows, a row of the input width and one of the output width per example. */
  record Rows(float[] features, float[] labels, int rows) implements java.io.Serializable {}

  /** The consistency group of an embedding model's tables (null for a dense model). */
  private final String tablesGroup;
  private final String networkJson;
  private final org.apache.spark.broadcast.Broadcast<Rows> rows;
  private final long everyMillis;
  private final boolean deferred;
  /** An embedding model's held-out rows (then {@link #rows} holds only their count), or null. */
  private final org.apache.spark.broadcast.Broadcast<io.sparkps.ml.embedding.CategoricalRows> categorical;
  /** Memory for the copies of a deferred evaluator. */
  static final long DEFERRED_BYTES = 256L << 20;

  /** A copy of the variables at {@code version}, read at {@code takenAtMillis}. */
  private record Snapshot(long version, long takenAtMillis, float[] params) {}

  /** An evaluator of {@code rows} (broadcast once, not shipped with the task); deferred: see the class. */
  EvalWorker(String networkJson, org.apache.spark.broadcast.Broadcast<Rows> rows, long everyMillis, boolean deferred) {
    this(networkJson, rows, everyMillis, deferred, null, null);
  }

  /**
   * An evaluator of an embedding model's held-out rows {@code categorical}, whose tables (in
   * consistency group {@code tablesGroup}, as the workers made them) it reads, never creating a row,
   * with the dense variables at each version; not deferred.
   */
  EvalWorker(String networkJson, org.apache.spark.broadcast.Broadcast<Rows> rows, long everyMillis, boolean deferred,
      org.apache.spark.broadcast.Broadcast<io.sparkps.ml.embedding.CategoricalRows> categorical, String tablesGroup) {
    if (deferred && categorical != null) {
      throw new IllegalArgumentException("evalDeferred does not go with embedding columns yet (a copy of the tables per "
          + "evaluation): set evalDeferred false");
    }
    this.categorical = categorical;
    this.tablesGroup = tablesGroup;
    this.networkJson = networkJson;
    this.rows = rows;
    this.everyMillis = everyMillis;
    this.deferred = deferred;
  }

  @Override
  public void run(EvaluatorContext ctx) throws Exception {
    Net net = Net.fromJson(networkJson);
    NetworkVariables variables = NetworkVariables.of(net, null);
    String probe = variables.names().get(0);
    DataSet data = categorical == null ? dataSet(net) : null;
    io.sparkps.ml.embedding.TableLookup lookup = null;
    List<Snapshot> snapshots = new ArrayList<>();
    int held = (int) Math.max(2, DEFERRED_BYTES / (4 * Math.max(1, net.params().length())));
    long interval = everyMillis;
    long seen = -1;
    boolean stopping;
    do {
      stopping = ctx.isStopping();
      long version = version(ctx.ps(), probe);
      if (version > seen && version > 0) {
        seen = version;
        long takenAt = System.currentTimeMillis();
        ctx.ps().pullInto(variables.views(net.params()));
        if (categorical != null) {
          // Made once the workers have made the tables and their group (the version moved).
          lookup = lookup != null ? lookup
              : new io.sparkps.ml.embedding.TableLookup(categorical.value().inputs(), ctx.ps(), tablesGroup);
          data = embeddingData(lookup, categorical.value());
        }
        if (deferred) {
          snapshots.add(new Snapshot(version, takenAt, net.params().toFloatVector()));
          if (snapshots.size() >= held) {
            thin(snapshots);
            interval *= 2;
          }
        } else {
          ctx.progress().report(version, rows.value().rows(), metrics(net, data));
        }
      }
      if (!stopping) {
        Thread.sleep(interval);
      }
    } while (!stopping);
    for (Snapshot snapshot : snapshots) {
      net.params().assign(Nd4j.createFromArray(snapshot.params()));
      Map<String, Double> metrics = new java.util.LinkedHashMap<>(metrics(net, data));
      metrics.put("takenAtMillis", (double) snapshot.takenAtMillis());
      ctx.progress().report(snapshot.version(), rows.value().rows(), metrics);
      ctx.progress().flush();
    }
  }

  /** Keeps every second snapshot from the first, and the last. */
  static <T> void thin(List<T> snapshots) {
    int n = snapshots.size();
    List<T> kept = new ArrayList<>();
    for (int i = 0; i < n; i += 2) {
      kept.add(snapshots.get(i));
    }
    if ((n - 1) % 2 != 0) {
      kept.add(snapshots.get(n - 1));
    }
    snapshots.clear();
    snapshots.addAll(kept);
  }

  /** Frees the broadcast held-out rows (the driver calls it when the run has ended). */
  void release() {
    rows.destroy();
    if (categorical != null) {
      categorical.destroy();
    }
  }

  /** An embedding model's held-out rows as the network's input now: their table rows read, pooled. */
  private static DataSet embeddingData(io.sparkps.ml.embedding.TableLookup lookup,
      io.sparkps.ml.embedding.CategoricalRows rows) {
    int[] all = java.util.stream.IntStream.range(0, rows.size()).toArray();
    float[] x = lookup.features(lookup.pull(rows, all, 0, false));
    float[] labels = java.util.Arrays.copyOf(rows.labels(), rows.size() * rows.labelWidth());
    return new DataSet(Nd4j.create(x, new long[] {rows.size(), rows.inputs().width()}, 'c'),
        Nd4j.create(labels, new long[] {rows.size(), rows.labelWidth()}, 'c'));
  }

  /** The metrics of {@code net} on {@code data}: classification or regression ones, by the network's loss. */
  static Map<String, Double> metrics(Net net, DataSet data) {
    INDArray predicted = net.output(data.getFeatures());
    double loss = net.score(data);
    if (net.classification()) {
      Map<String, Double> out = new java.util.LinkedHashMap<>();
      if (net.outputs() == 1) {
        // one sigmoid unit: accuracy at 0.5, and the AUC below
        INDArray hit = predicted.gt(0.5).castTo(org.nd4j.linalg.api.buffer.DataType.FLOAT)
            .eq(data.getLabels().gt(0.5).castTo(org.nd4j.linalg.api.buffer.DataType.FLOAT));
        out.put("accuracy", hit.castTo(org.nd4j.linalg.api.buffer.DataType.DOUBLE).meanNumber().doubleValue());
      } else {
        Evaluation eval = new Evaluation((int) net.outputs());
        eval.eval(data.getLabels(), predicted);
        out.putAll(Map.of("accuracy", eval.accuracy(), "precision", eval.precision(), "recall", eval.recall(),
            "f1", eval.f1()));
      }
      if (net.outputs() <= 2) {
        // binary: the area under the ROC curve, exact (no thresholds binned)
        org.nd4j.evaluation.classification.ROC roc = new org.nd4j.evaluation.classification.ROC(0);
        roc.eval(data.getLabels(), predicted);
        out.put("auc", roc.calculateAUC());
      }
      out.put("loss", loss);
      return out;
    }
    RegressionEvaluation eval = new RegressionEvaluation((int) net.outputs());
    eval.eval(data.getLabels(), predicted);
    return Map.of("mse", eval.averageMeanSquaredError(), "mae", eval.averageMeanAbsoluteError(),
        "r2", eval.averageRSquared(), "loss", loss);
  }

  private static long version(PsClient ps, String name) {
    try {
      return ps.read(name).version();
    } catch (IllegalArgumentException | IllegalStateException notYet) {
      return -1; // not created or not initialized yet
    }
  }

  private DataSet dataSet(Net net) {
    Rows r = rows.value();
    return new DataSet(Nd4j.create(r.features(), new long[] {r.rows(), net.inputWidth()}, 'c'),
        Nd4j.create(r.labels(), new long[] {r.rows(), net.outputs()}, 'c'));
  }
}
