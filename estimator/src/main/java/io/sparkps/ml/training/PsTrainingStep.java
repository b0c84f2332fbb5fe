package io.sparkps.ml.training;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.PsClient;
import java.util.Map;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.api.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One worker's training step against the parameter servers: read the current parameters into
 * the network, compute the minibatch gradient with DL4J (without its updater), push it; the
 * servers apply each parameter's updater. With one worker and SYNC this is exactly
 * {@code MultiLayerNetwork.fit(minibatch)} (or {@code ComputationGraph.fit}).
 */
public final class PsTrainingStep implements AutoCloseable {
  private final Net net;
  private final NetworkVariables variables;
  private final PsClient ps;
  private final Map<String, INDArray> paramViews;
  private INDArray gradientArray;
  private Map<String, INDArray> gradientViews;
  private final boolean workerUpdates;
  private int iteration;
  /** With worker updates: what the shards sent (sparse pulls need it unchanged), and views of it. */
  private INDArray held;
  private Map<String, INDArray> heldViews;
  /** With gradient accumulation: the sum of this step's minibatch gradients so far, and views of it. */
  private INDArray sum;
  private Map<String, INDArray> sumViews;
  /** Whether a step keeps the loss's gradient by the input (embedding models), and the last one. */
  private boolean keepInputGradient;
  private INDArray inputGradient;
  /** Nanoseconds the last minibatch spent pulling, computing its gradient (and worker-side update), pushing. */
  private long pullNanos;
  private long computeNanos;
  private long pushNanos;
  /** The layer-by-layer transfers that overlap the passes, or null (whole transfers between the passes). */
  private OverlappedTransfers overlap;

  /** Steps for {@code net} (initialized) whose variables live on {@code ps}. */
  public PsTrainingStep(MultiLayerNetwork net, NetworkVariables variables, PsClient ps) {
    this(Net.of(net), variables, ps);
  }

  /** Steps for {@code graph} (initialized; one input, one output) whose variables live on {@code ps}. */
  public PsTrainingStep(ComputationGraph graph, NetworkVariables variables, PsClient ps) {
    this(Net.of(graph), variables, ps);
  }

  public PsTrainingStep(Net net, NetworkVariables variables, PsClient ps) {
    this(net, variables, ps, false);
  }

  /**
   * Steps that, with {@code workerUpdates}, run DL4J's updaters here and push their updates (for
   * variables whose shards apply no optimizer: {@link NetworkVariables#of(Net, String, boolean)}).
   */
  PsTrainingStep(Net net, NetworkVariables variables, PsClient ps, boolean workerUpdates) {
    this.workerUpdates = workerUpdates;
    net.checkTrainable();
    this.net = net;
    this.variables = variables;
    this.ps = ps;
    this.paramViews = variables.views(net.params());
  }

  /**
   * Makes steps of one minibatch overlap their transfers with the forward and backward passes,
   * layer by layer ({@link OverlappedTransfers}), the transfers going on a thread named for
   * {@code worker}; steps with worker-side updates, gradient accumulation or the input's gradient
   * keep whole transfers. Returns false, changing nothing, when the network's layers cannot be
   * hooked (a recurrent or frozen layer, or no layer before the output layer).
   */
  boolean overlapTransfers(String worker) {
    if (workerUpdates || overlap != null) {
      return overlap != null;
    }
    OverlappedTransfers transfers = new OverlappedTransfers(ps, net.layerUnits(), paramViews, variables,
        net.miniBatch(), worker);
    if (!net.hookLayers(transfers)) {
      transfers.close();
      return false;
    }
    overlap = transfers;
    return true;
  }

  /** Ends the transfer thread of {@link #overlapTransfers}, if any. */
  @Override
  public void close() {
    if (overlap != null) {
      overlap.close();
    }
  }

  /** Pulls the parameters into the network (for SYNC, those of this worker's step). */
  public void pull() {
    if (!workerUpdates) {
      ps.pullInto(paramViews);
      return;
    }
    // The network gets what the shards hold less this worker's own updates not yet sent: it sees
    // all of its own steps at once, the other workers' as sparse pulls bring them.
    if (held == null) {
      held = net.params().dup();
      heldViews = variables.views(held);
    }
    ps.pullInto(heldViews);
    net.params().assign(held);
    ps.subtractUnsent(paramViews);
  }

  /** One step on {@code batch}: pull, gradient, push. Returns the minibatch's score (loss). */
  public double step(DataSet batch) {
    return step(batch, iteration, 0);
  }

  /**
   * As {@link #step(DataSet)}, as this worker's step {@code iteration} (from 0) in epoch
   * {@code epoch}: what worker-side updaters count their schedules and bias corrections by.
   */
  public double step(DataSet batch, long iteration, int epoch) {
    return step(batch, iteration, epoch, 0, 1);
  }

  /**
   * As {@link #step(DataSet, long, int)}, as minibatch {@code position} (from 0) of {@code of}
   * whose mean gradient is pushed as one step: the first pulls, every one computes its gradient
   * from those values, the last pushes their mean.
   */
  public double step(DataSet batch, long iteration, int epoch, int position, int of) {
    if (position < 0 || position >= of || (of > 1 && workerUpdates)) {
      throw new IllegalArgumentException("minibatch " + position + " of " + of + " per step" + (workerUpdates
          ? " with worker-side updates, which take one minibatch per step" : ""));
    }
    this.iteration = (int) iteration + 1;
    if (overlap != null && of == 1 && !keepInputGradient) {
      return overlappedStep(batch);
    }
    long t0 = System.nanoTime();
    if (position == 0) {
      pull();
    }
    long t1 = System.nanoTime();
    pullNanos = t1 - t0;
    pushNanos = 0;
    net.setBatch(batch);
    if (keepInputGradient) {
      inputGradient = net.computeGradientAndInputGradient();
    } else {
      net.computeGradientAndScore();
    }
    Map<String, INDArray> gradients = gradientViews();
    long examples = batch.getFeatures().size(0);
    if (workerUpdates) {
      net.applyUpdater((int) iteration, epoch, (int) examples);
    } else if (of > 1) {
      accumulate(position, of, examples);
      if (position < of - 1) {
        computeNanos = System.nanoTime() - t1;
        return net.score();
      }
      gradients = sumViews;
    } else if (net.miniBatch()) {
      // DL4J's losses sum over the minibatch; its updater divides by the minibatch size (except
      // for parameters like BatchNorm's running statistics) before regularization and the update
      // rule, so the servers get the same gradient.
      gradients.forEach((name, g) -> {
        if (variables.dividesByMinibatch(name)) {
          g.divi(examples);
        }
      });
    }
    long t2 = System.nanoTime();
    computeNanos = t2 - t1;
    ps.push(gradients);
    pushNanos = System.nanoTime() - t2;
    return net.score();
  }

  /** A step whose transfers overlap its passes: the pulls' and pushes' times are what the step waited for them. */
  private double overlappedStep(DataSet batch) {
    long t0 = System.nanoTime();
    net.setBatch(batch);
    overlap.begin(ps.step(), batch.getFeatures().size(0), this::gradientViews);
    net.computeGradientAndScore();
    long t1 = System.nanoTime();
    overlap.end();
    pullNanos = overlap.pullWaitNanos();
    computeNanos = t1 - t0 - pullNanos;
    pushNanos = overlap.pushWaitNanos();
    return net.score();
  }

  /** Views of the network's gradient by variable (DL4J allocates the flat gradient on the first backward pass). */
  private Map<String, INDArray> gradientViews() {
    if (net.flatGradients() != gradientArray) {
      gradientArray = net.flatGradients();
      gradientViews = variables.views(gradientArray);
    }
    return gradientViews;
  }

  /** Milliseconds the last minibatch spent pulling (SYNC: with the wait for the other workers' pushes). */
  double pullMillis() {
    return pullNanos / 1e6;
  }

  /** Milliseconds the last minibatch spent on its forward and backward pass (and a worker-side update). */
  double computeMillis() {
    return computeNanos / 1e6;
  }

  /** Milliseconds the last minibatch spent pushing (0 for a minibatch whose gradient waits for the step's others). */
  double pushMillis() {
    return pushNanos / 1e6;
  }

  /** Makes every step keep the loss's gradient by the network's input, for {@link #inputGradient()}. */
  public void keepInputGradient() {
    keepInputGradient = true;
  }

  /** The last step's gradient of the summed loss by each input value ({@code [minibatch, width]}). */
  public INDArray inputGradient() {
    return inputGradient;
  }

  /**
   * Adds minibatch {@code position}'s gradient to the step's: the mean over the step's {@code of}
   * minibatches of each one's gradient as DL4J's updater sees it (divided by its examples, as in
   * {@link #step(DataSet, long, int, int, int)}), each scaled as it is added, in one pass.
   */
  private void accumulate(int position, int of, long examples) {
    if (sum == null) {
      sum = gradientArray.ulike();
      sumViews = variables.views(sum);
    }
    for (Map.Entry<String, INDArray> e : gradientViews.entrySet()) {
      INDArray g = e.getValue();
      INDArray into = sumViews.get(e.getKey());
      double scale = (net.miniBatch() && variables.dividesByMinibatch(e.getKey()) ? 1.0 / examples : 1.0) / of;
      if (position == 0) {
        g.mul(scale, into);
      } else {
        Nd4j.getBlasWrapper().level1().axpy(g.length(), scale, g, into);
      }
    }
  }
}
