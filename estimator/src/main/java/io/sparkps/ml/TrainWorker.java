package io.sparkps.ml;

import io.sparkps.ml.data.Minibatches;
import io.sparkps.ps.PsClient;
import io.sparkps.spark.WorkerContext;
import io.sparkps.spark.WorkerFunction;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.dataset.DataSet;

/**
 * A worker of {@link Dl4jTrainer}: builds the network, declares its variables (the chief
 * initializes them from its freshly initialized network; a retried stage keeps them), and runs
 * the same number of steps as every other worker, so SYNC steps always complete.
 */
final class TrainWorker implements WorkerFunction<Row, float[]> {
  private static final long serialVersionUID = 1L;
  private final Dl4jTrainer.Settings settings;
  private final int inputs;
  private final int classes;
  private final int stepsPerEpoch;

  TrainWorker(Dl4jTrainer.Settings settings, int inputs, int classes, int stepsPerEpoch) {
    this.settings = settings;
    this.inputs = inputs;
    this.classes = classes;
    this.stepsPerEpoch = stepsPerEpoch;
  }

  @Override
  public float[] run(WorkerContext<Row> ctx) {
    MultiLayerNetwork net = Dl4jTrainer.network(settings.networkJson());
    String group = Dl4jTrainer.group(settings, ctx.numWorkers()).name();
    NetworkVariables variables = NetworkVariables.of(net, group);
    PsClient ps = ctx.ps();
    ps.createGroup(Dl4jTrainer.group(settings, ctx.numWorkers()));
    ps.create(variables.specs());
    if (ctx.isChief()) {
      ps.initializeAll();
    } else {
      ps.awaitInitialized(variables.names(), Duration.ofMinutes(5));
    }
    if (ctx.stageAttempt() > 0) {
      // A retried stage continues from the servers' state: SYNC steps count from their version.
      ps.setStep(ps.read(variables.names().get(0)).version());
    }
    Minibatches data = Minibatches.of(ctx.data(), ctx.index(), settings.featuresCol(), settings.labelCol(), inputs,
        classes);
    PsTrainingStep step = new PsTrainingStep(net, variables, ps);
    long examples = 0;
    long done = 0;
    for (int epoch = 0; epoch < settings.epochs(); epoch++) {
      Iterator<DataSet> batches = data.epoch(epoch, stepsPerEpoch, settings.batchSize(), settings.seed() + ctx.index());
      while (batches.hasNext()) {
        double loss = step.step(batches.next());
        examples += settings.batchSize();
        done++;
        ctx.progress().report(done, examples, Map.of("loss", loss, "epoch", (double) epoch));
      }
    }
    if (!ctx.isChief()) {
      return null;
    }
    step.pull();
    return net.params().toFloatVector();
  }
}
