package io.sparkps.spark;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.spark.coord.CoordinatorClient;
import java.time.Duration;
import org.apache.spark.BarrierTaskContext;

/**
 * Every barrier of a worker task lives here. They run through the run's coordinator rather than
 * Spark's {@code BarrierTaskContext.barrier()}, which polls once a second (a second of latency per
 * call); the coordinator answers within milliseconds. Each wait goes in slices, between which the
 * task checks whether Spark killed it, and ends early when a worker of the same stage attempt
 * failed (Spark then fails the attempt and kills the rest).
 *
 * <p>Caution: all workers of an attempt must pass the same barriers in the same order, on every
 * path that does not fail, or they wait for each other until the timeout:
 * <ol>
 *   <li>{@link #rendezvous} at the start of each worker task: every worker of the stage attempt
 *       has registered (a partial attempt is refused);
 *   <li>{@link Sync#user} when the worker function asks for one ({@link WorkerContext#barrier()});
 *   <li>{@link Sync#finish} at the end of each successful worker function, so that no task's output
 *       is committed while another can still fail: otherwise Spark may keep a finished task's
 *       output and retry only the failed one, a barrier attempt with fewer workers than the run has.
 * </ol>
 */
final class BarrierSync {
  /** How long one wait on the coordinator lasts before the task checks whether Spark killed it. */
  private static final Duration SLICE = Duration.ofSeconds(2);

  private BarrierSync() {}

  /**
   * Waits until all workers of this stage attempt are present, at most {@code timeout}; gives up
   * early when Spark kills the task or another worker of the attempt has failed. Returns the
   * barriers of this task.
   */
  static Sync rendezvous(BarrierTaskContext context, CoordinatorClient coordinator, Duration timeout, int numWorkers,
      Duration barrierTimeout) {
    int tasks = context.getTaskInfos().length;
    if (tasks != numWorkers) {
      throw new IllegalStateException("stage attempt " + context.stageAttemptNumber() + " runs " + tasks + " of the "
          + numWorkers + " workers: Spark retried only part of the barrier stage, which SparkPS cannot train with");
    }
    await(context, coordinator, 0, timeout);
    return new Sync(context, coordinator, barrierTimeout);
  }

  private static void await(BarrierTaskContext context, CoordinatorClient coordinator, int phase, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Duration left = Duration.ofNanos(deadline - System.nanoTime());
      try {
        coordinator.awaitWorkers(context.stageAttemptNumber(), phase, context.partitionId(),
            left.compareTo(SLICE) < 0 ? left : SLICE);
        return;
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED || System.nanoTime() >= deadline) {
          throw e;
        }
        context.killTaskIfInterrupted();
      }
    }
  }

  /** The numbered barriers of one worker task after the rendezvous. */
  static final class Sync {
    private final BarrierTaskContext context;
    private final CoordinatorClient coordinator;
    private final Duration timeout;
    private int phase;

    private Sync(BarrierTaskContext context, CoordinatorClient coordinator, Duration timeout) {
      this.context = context;
      this.coordinator = coordinator;
      this.timeout = timeout;
    }

    /** A barrier the worker function asked for ({@link WorkerContext#barrier()}). */
    synchronized void user() {
      await(context, coordinator, ++phase, timeout);
    }

    /** Waits until every worker of this attempt has finished its function successfully. */
    synchronized void finish() {
      await(context, coordinator, ++phase, timeout);
    }
  }
}
