package io.sparkps.spark;

import io.grpc.StatusRuntimeException;
import io.sparkps.ps.PsUnavailableException;
import io.sparkps.ps.ShardRecovery;
import io.sparkps.spark.coord.CoordinatorClient;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task's {@link ShardRecovery}: asks the coordinator where a lost ps's replacement serves
 * (waiting as long as the driver may take to notice the loss and relaunch it) and reports refills.
 */
final class CoordinatorRecovery implements ShardRecovery {
  private final CoordinatorClient coordinator;
  private final int worker;
  private final Duration bound;
  private final boolean refills;
  private static final Logger LOG = LoggerFactory.getLogger(CoordinatorRecovery.class);

  CoordinatorRecovery(CoordinatorClient coordinator, int worker, ClusterSpec spec, boolean refills) {
    this.coordinator = coordinator;
    this.worker = worker;
    this.refills = refills;
    // Noticing a hung ps takes up to roleTimeout; its replacement then has psStartTimeout to register.
    this.bound = spec.roleTimeout().plus(spec.psStartTimeout());
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
