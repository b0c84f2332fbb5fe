package io.sparkps.spark.recovery;

import io.grpc.StatusRuntimeException;
import io.sparkps.ps.ShardRecovery;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.spark.coord.CoordinatorClient;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task's {@link ShardRecovery}: asks the coordinator where a lost ps's replacement serves
 * (waiting as long as the driver may take to notice the loss and relaunch it) and reports refills.
 */
public final class CoordinatorRecovery implements ShardRecovery {
  private final CoordinatorClient coordinator;
  private final int worker;
  private final Duration bound;
  private final boolean refills;
  /** The stage attempt of the worker whose client this is (-1: not a worker's). */
  private final int attempt;
  private static final Logger LOG = LoggerFactory.getLogger(CoordinatorRecovery.class);

  /**
   * The recovery of worker {@code worker}'s client (the evaluator's: the index after the last
   * worker), which refills replaced shards when {@code refills} and waits at most {@code bound} for
   * a replacement (noticing a hung ps takes up to the role timeout, its replacement then has the ps
   * start timeout to register).
   */
  public CoordinatorRecovery(CoordinatorClient coordinator, int worker, Duration bound, boolean refills) {
    this(coordinator, worker, bound, refills, -1);
  }

  /** As above, for a worker of stage attempt {@code attempt}, whose chief may ask for kept copies ({@link #requestRefill}). */
  public CoordinatorRecovery(CoordinatorClient coordinator, int worker, Duration bound, boolean refills, int attempt) {
    this.attempt = attempt;
    this.coordinator = coordinator;
    this.worker = worker;
    this.refills = refills;
    this.bound = bound;
  }

  @Override
  public String awaitReplacement(int shard, String lostAddress) throws InterruptedException {
    if (Thread.currentThread().isInterrupted()) {
      throw new InterruptedException();
    }
    try {
      String address = coordinator.awaitPs(shard, lostAddress, bound);
      return address.isEmpty() ? null : address;
    } catch (StatusRuntimeException e) {
      throw new PsUnavailableException("ps " + shard + " at " + lostAddress + " stopped answering and "
          + e.getStatus().getDescription(), e);
    }
  }

  @Override
  public boolean refills() {
    return refills;
  }

  @Override
  public boolean requestRefill(java.util.Collection<Integer> shards) {
    if (attempt <= 0) {
      return false; // no earlier attempt: nothing was kept
    }
    coordinator.requestRefill(attempt, shards);
    return true;
  }

  @Override
  public Duration refillWait() {
    return bound;
  }

  @Override
  public void restored(int shard, long step, String source) {
    try {
      coordinator.reportRecovery(shard, worker, step, source);
    } catch (StatusRuntimeException e) {
      // The record is for the summary; training goes on without it.
      LOG.warn("SparkPS worker {}: could not report the refill of ps {} to the driver: {}", worker, shard,
          e.getStatus());
    }
  }
}
