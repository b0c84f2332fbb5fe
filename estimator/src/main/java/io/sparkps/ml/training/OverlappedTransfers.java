package io.sparkps.ml.training;

import io.sparkps.ml.network.LayerPasses;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.StepParts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A worker's pulls and pushes overlapped with its forward and backward passes, layer by layer, on
 * a transfer thread of its own. A step queues the pulls of every layer's parameters, first layers
 * first (as in P3, Jayarajan et al., 2019): the forward pass of a layer waits only for its own
 * parameters, while the next layers' travel. The backward pass announces each layer as it is done
 * with the layers above it, whose gradients are then pushed while it goes on below (wait-free
 * backpropagation, as in Poseidon, Zhang et al., 2017). The step ends when the last layer's
 * gradient is pushed; the next one's pulls are queued when it begins, so between steps nothing
 * travels (checkpoints and the end of training see every push in).
 *
 * <p>Transfers go in {@link StepParts}, one part per layer, so SYNC's semantics are those of
 * whole transfers: a layer's parameters for step t+1 include every worker's step-t gradient of
 * that layer. A failed transfer fails the step at the worker's next wait, with its own exception,
 * and the transfers queued after it are not made.
 */
public final class OverlappedTransfers implements LayerPasses, AutoCloseable {

  /** Longest a wait for the transfer thread may take: beyond the client's own timeouts, which name the shard. */
  static final Duration WAIT = Duration.ofMinutes(15);
  private final StepParts parts;
  private final List<Unit> units;
  /** Each unit's parameter views, by variable: where its pulls land. */
  private final List<Map<String, INDArray>> unitParams = new ArrayList<>();
  private final NetworkVariables variables;
  private final boolean divideByMinibatch;
  private final ExecutorService thread;
  private final String worker;
  private Supplier<Map<String, INDArray>> gradients;
  private long examples;
  private long step;
  private final List<Future<?>> pulls = new ArrayList<>();
  private final List<Future<?>> pushes = new ArrayList<>();
  /** Units whose pulls were awaited: [0, awaited); units whose pushes are queued: [pushedFrom, units). */
  private int awaited;
  private int pushedFrom;
  private boolean inStep;
  private volatile RuntimeException failed;
  private long pullWaitNanos;
  private long pushWaitNanos;

  /**
   * Transfers of {@code units} (in forward order) between the parameter views {@code paramViews}
   * and the shards of {@code ps}, on a thread named for {@code worker}.
   */
  OverlappedTransfers(PsClient ps, List<Unit> units, Map<String, INDArray> paramViews, NetworkVariables variables,
      boolean divideByMinibatch, String worker) {
    this.parts = GrpcPsClient.of(ps).stepParts();
    this.units = List.copyOf(units);
    for (Unit u : this.units) {
      Map<String, INDArray> into = new LinkedHashMap<>();
      u.names().forEach(n -> into.put(n, paramViews.get(n)));
      unitParams.add(into);
    }
    this.variables = variables;
    this.divideByMinibatch = divideByMinibatch;
    this.worker = worker;
    this.thread = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "sparkps-transfers-" + worker);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Begins a step of {@code examples} examples: queues every layer's pull. {@code gradients} gives
   * the views of the network's gradient by variable, read once the backward pass has begun.
   */
  void begin(long step, long examples, Supplier<Map<String, INDArray>> gradients) {
    checkNotFailed();
    this.step = step;
    this.examples = examples;
    this.gradients = gradients;
    pulls.clear();
    pushes.clear();
    awaited = 0;
    pushedFrom = units.size();
    pullWaitNanos = 0;
    pushWaitNanos = 0;
    inStep = true;
    for (Map<String, INDArray> into : unitParams) {
      pulls.add(submit(() -> parts.pull(into)));
    }
  }

  /** The forward pass is about to run the layer at {@code position}: waits for its parameters (and those before). */
  @Override
  public void forward(int position) {
    if (!inStep) {
      return;
    }
    long t0 = System.nanoTime();
    while (awaited < units.size() && units.get(awaited).position() <= position) {
      await(pulls.get(awaited), "the parameters of layer " + units.get(awaited).position() + " "
          + units.get(awaited).names());
      awaited++;
    }
    pullWaitNanos += System.nanoTime() - t0;
  }

  /** The forward pass is about to run the output layer (or whatever remains): waits for every layer's parameters. */
  @Override
  public void forwardDone() {
    forward(Integer.MAX_VALUE);
  }

  /** The backward pass is about to run the layer at {@code position}: the gradients of the layers above it are done. */
  @Override
  public void backward(int position) {
    if (!inStep) {
      return;
    }
    Map<String, INDArray> views = null;
    while (pushedFrom > 0 && units.get(pushedFrom - 1).position() > position) {
      views = views == null ? gradients.get() : views;
      pushedFrom--;
      Map<String, INDArray> of = new LinkedHashMap<>();
      for (String n : units.get(pushedFrom).names()) {
        of.put(n, views.get(n));
      }
      pushes.add(submit(() -> {
        if (divideByMinibatch) {
          // DL4J's losses sum over the minibatch; its updater divides (see PsTrainingStep).
          of.forEach((n, g) -> {
            if (variables.dividesByMinibatch(n)) {
              g.divi(examples);
            }
          });
        }
        parts.push(of);
      }));
    }
  }

  /** Ends the step: pushes what is left, waits for every push, and ends the worker's step on the shards. */
  void end() {
    if (!inStep) {
      return;
    }
    forwardDone(); // a network whose layers announced nothing still has its pulls waited for
    backward(Integer.MIN_VALUE);
    long t0 = System.nanoTime();
    for (int i = 0; i < pushes.size(); i++) {
      await(pushes.get(i), "the push of a layer's gradient");
    }
    inStep = false;
    parts.end();
    pushWaitNanos = System.nanoTime() - t0;
  }

  /** Nanoseconds the last step's forward pass waited for parameters. */
  long pullWaitNanos() {
    return pullWaitNanos;
  }

  /** Nanoseconds the last step waited for its pushes after its backward pass. */
  long pushWaitNanos() {
    return pushWaitNanos;
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }

  private Future<?> submit(Runnable transfer) {
    return thread.submit(() -> {
      if (failed != null) {
        throw failed; // a transfer after a failed one is not made
      }
      try {
        transfer.run();
      } catch (RuntimeException e) {
        failed = e;
        throw e;
      }
    });
  }

  private void checkNotFailed() {
    RuntimeException f = failed;
    if (f != null) {
      inStep = false;
      throw f;
    }
  }

  private void await(Future<?> transfer, String what) {
    try {
      transfer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      inStep = false;
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      inStep = false;
      throw new IllegalStateException(worker + " waited " + WAIT.toMinutes() + " min at step " + step
          + " for " + what + " from the parameter servers (its transfer thread is stuck): see the thread "
          + "sparkps-transfers-" + worker + " in the executor's thread dump", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      inStep = false;
      throw new IllegalStateException(worker + " was interrupted waiting for " + what + " at step " + step, e);
    }
  }
}
