package io.sparkps.ps.client;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.annotation.Internal;
import java.util.Map;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A worker's steps with their transfers in parts, so that they can overlap the computation: a
 * step's parameters pulled part by part (say, a network's first layer first, so that its forward
 * pass can start while the next layers' values travel), its gradients pushed part by part (each
 * layer's as soon as the backward pass has made it), and {@link #end()} after the last push, which
 * ends the step as {@link PsClient#push} does. Every part is read and written at the worker's step
 * ({@link PsClient#step()}): a SYNC part waits for every worker's gradients of the step before,
 * of its own variables only; ASYNC and SSP parts behave as whole transfers do.
 *
 * <p>The copy of the parameters that a worker keeps for refilling a lost shard is the union of
 * its parts, each variable as of the latest part that pulled it, so a shard lost between two parts
 * is refilled from what the worker holds, as after a whole pull. The version sent with the
 * gradients (for staleness-aware updates) is the lowest any part of the step read.
 *
 * <p>Obtained from {@link GrpcPsClient#stepParts()}; as thread-safe as the client, though a step's parts
 * are meant to go from one thread, in order.
 */
@Internal
public final class StepParts {
  private final GrpcPsClient client;
  private final VariableCatalog catalog;
  private final Transfers transfers;
  private final Pulls pulls;
  private final Recovery recovery;
  /** The step whose parts {@link #lowestRead} covers. */
  private long readStep = -1;
  private long lowestRead = -1;

  StepParts(GrpcPsClient client, VariableCatalog catalog, Transfers transfers, Pulls pulls, Recovery recovery) {
    this.client = client;
    this.catalog = catalog;
    this.transfers = transfers;
    this.pulls = pulls;
    this.recovery = recovery;
  }

  /**
   * Pulls some variables at this worker's step into arrays of their shape (dense float32, 'c'
   * order), as {@link PsClient#pullInto} does for all of them (sparse transfers included).
   */
  public void pull(Map<String, INDArray> destinations) {
    client.checkOpen();
    destinations.forEach((n, a) -> VariableCatalog.checkShape(catalog.resolve(n), a, "pull destination"));
    long step = transfers.step();
    recovery.pullStarting(destinations.keySet());
    long version = pulls.pullDense(destinations, catalog.placement(), step, false, true);
    synchronized (this) {
      lowestRead = step == readStep ? Math.min(lowestRead, version) : version;
      readStep = step;
      transfers.readVersion(lowestRead);
    }
    recovery.recordPullPart(destinations, step, version);
  }

  /** Pushes some of this step's gradients (no variable twice in a step); the step goes on until {@link #end()}. */
  public void push(Map<String, INDArray> gradients) {
    client.checkOpen();
    transfers.update(io.sparkps.ps.grpc.proto.UpdateOp.GRADIENT, gradients, catalog, "push");
  }

  /** Ends this worker's step after its last part was pushed: the next parts read and write the next step. */
  public void end() {
    client.checkOpen();
    transfers.advanceStep();
  }
}
