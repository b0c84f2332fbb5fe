package io.sparkps.ml.training;

import io.sparkps.ml.network.BlasThreads;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
public final class EvalWorker implements EvaluatorFunction {
  private static final Logger LOG = LoggerFactory.getLogger(EvalWorker.class);
  private static final long serialVersionUID = 1L;
  private final String networkJson;
  private final ModelInputs.HeldOut heldOut;
  private final long everyMillis;
  private final boolean deferred;
  /** Memory for the copies of a deferred evaluator. */
  static final long DEFERRED_BYTES = 256L << 20;

  /** A copy of the variables at {@code version}, read at {@code takenAtMillis}. */
  private record Snapshot(long version, long takenAtMillis, float[] params) {}

  /**
   * An evaluator of the network {@code networkJson} on {@code heldOut}, every {@code everyMillis}
   * at most; deferred: see the class.
   */
  public EvalWorker(String networkJson, ModelInputs.HeldOut heldOut, long everyMillis, boolean deferred) {
    this.networkJson = networkJson;
    this.heldOut = heldOut;
    this.everyMillis = everyMillis;
    this.deferred = deferred;
  }

  @Override
  public void run(EvaluatorContext ctx) throws Exception {
    BlasThreads.fitToThisTask(false).ifPresent(line -> LOG.info("the evaluator: {}", line));
    Net net = Net.fromJson(networkJson);
    NetworkVariables variables = NetworkVariables.of(net, null);
    String probe = variables.names().get(0);
    DataSet data = null;
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
        data = heldOut.read(net, ctx.ps());
        if (deferred) {
          snapshots.add(new Snapshot(version, takenAt, net.params().toFloatVector()));
          if (snapshots.size() >= held) {
            thin(snapshots);
            interval *= 2;
          }
        } else {
          ctx.progress().report(version, heldOut.rows(), metrics(net, data));
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
      ctx.progress().report(snapshot.version(), heldOut.rows(), metrics);
      ctx.progress().flush();
    }
  }

  /** Keeps every second snapshot from the first, and the last. */
  public static <T> void thin(List<T> snapshots) {
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
  public void release() {
    heldOut.release();
  }

  /** The metrics of {@code net} on {@code data}: classification or regression ones, by the network's loss. */
  static Map<String, Double> metrics(Net net, DataSet data) {
    INDArray predicted = net.output(data.getFeatures());
    double loss = net.score(data);
    if (net.classification()) {
      Map<String, Double> out = new java.util.LinkedHashMap<>();
      if (net.outputs() <= 2) {
        // binary: the area under the ROC curve, exact (no thresholds binned), and the loss (log loss) first
        org.nd4j.evaluation.classification.ROC roc = new org.nd4j.evaluation.classification.ROC(0);
        roc.eval(data.getLabels(), predicted);
        out.put("auc", roc.calculateAUC());
        out.put("loss", loss);
      }
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
      out.putIfAbsent("loss", loss);
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
}
