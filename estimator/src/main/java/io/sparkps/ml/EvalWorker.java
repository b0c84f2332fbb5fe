package io.sparkps.ml;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.EvaluatorContext;
import io.sparkps.spark.EvaluatorFunction;
import java.util.Map;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.evaluation.classification.Evaluation;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The evaluator of a fit: whenever the variables' version moves (at most once per
 * {@code everyMillis}), reads them into its own copy of the network and reports accuracy,
 * macro precision/recall/F1 and loss on the held-out set. Training never waits for it.
 */
final class EvalWorker implements EvaluatorFunction {
  private static final long serialVersionUID = 1L;
  private final String networkJson;
  private final float[] features;
  private final int[] labels;
  private final int width;
  private final int classes;
  private final long everyMillis;

  EvalWorker(String networkJson, float[] features, int[] labels, int width, int classes, long everyMillis) {
    this.networkJson = networkJson;
    this.features = features;
    this.labels = labels;
    this.width = width;
    this.classes = classes;
    this.everyMillis = everyMillis;
  }

  @Override
  public void run(EvaluatorContext ctx) throws Exception {
    MultiLayerNetwork net = Dl4jTrainer.network(networkJson);
    NetworkVariables variables = NetworkVariables.of(net, null);
    String probe = variables.names().get(0);
    DataSet data = dataSet();
    long seen = -1;
    boolean stopping;
    do {
      stopping = ctx.isStopping();
      long version = version(ctx.ps(), probe);
      if (version > seen && version > 0) {
        seen = version;
        ctx.ps().pullInto(variables.views(net.params()));
        Evaluation eval = new Evaluation(classes);
        eval.eval(data.getLabels(), net.output(data.getFeatures()));
        double loss = net.score(data);
        ctx.progress().report(version, labels.length, Map.of("accuracy", eval.accuracy(), "precision", eval.precision(),
            "recall", eval.recall(), "f1", eval.f1(), "loss", loss));
      }
      if (!stopping) {
        Thread.sleep(everyMillis);
      }
    } while (!stopping);
  }

  private static long version(PsClient ps, String name) {
    try {
      return ps.read(name).version();
    } catch (IllegalArgumentException | IllegalStateException notYet) {
      return -1; // not created or not initialized yet
    }
  }

  private DataSet dataSet() {
    INDArray x = Nd4j.create(features, new long[] {labels.length, width}, 'c');
    float[] y = new float[labels.length * classes];
    for (int i = 0; i < labels.length; i++) {
      y[i * classes + labels[i]] = 1f;
    }
    return new DataSet(x, Nd4j.create(y, new long[] {labels.length, classes}, 'c'));
  }
}
