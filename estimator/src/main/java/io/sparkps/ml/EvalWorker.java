package io.sparkps.ml;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.EvaluatorContext;
import io.sparkps.spark.EvaluatorFunction;
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
 */
final class EvalWorker implements EvaluatorFunction {
  private static final long serialVersionUID = 1L;
  /** The held-out rows, a row of the input width and one of the output width per example. */
  record Rows(float[] features, float[] labels, int rows) implements java.io.Serializable {}

  private final String networkJson;
  private final org.apache.spark.broadcast.Broadcast<Rows> rows;
  private final long everyMillis;

  /** An evaluator of {@code rows} (broadcast once, not shipped with the task). */
  EvalWorker(String networkJson, org.apache.spark.broadcast.Broadcast<Rows> rows, long everyMillis) {
    this.networkJson = networkJson;
    this.rows = rows;
    this.everyMillis = everyMillis;
  }

  @Override
  public void run(EvaluatorContext ctx) throws Exception {
    Net net = Net.fromJson(networkJson);
    NetworkVariables variables = NetworkVariables.of(net, null);
    String probe = variables.names().get(0);
    DataSet data = dataSet(net);
    long seen = -1;
    boolean stopping;
    do {
      stopping = ctx.isStopping();
      long version = version(ctx.ps(), probe);
      if (version > seen && version > 0) {
        seen = version;
        ctx.ps().pullInto(variables.views(net.params()));
        ctx.progress().report(version, rows.value().rows(), metrics(net, data));
      }
      if (!stopping) {
        Thread.sleep(everyMillis);
      }
    } while (!stopping);
  }

  /** Frees the broadcast held-out rows (the driver calls it when the run has ended). */
  void release() {
    rows.destroy();
  }

  /** The metrics of {@code net} on {@code data}: classification or regression ones, by the network's loss. */
  static Map<String, Double> metrics(Net net, DataSet data) {
    INDArray predicted = net.output(data.getFeatures());
    double loss = net.score(data);
    if (net.classification()) {
      Evaluation eval = new Evaluation((int) net.outputs());
      eval.eval(data.getLabels(), predicted);
      return Map.of("accuracy", eval.accuracy(), "precision", eval.precision(), "recall", eval.recall(), "f1", eval.f1(),
          "loss", loss);
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
