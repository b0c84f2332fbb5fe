package io.sparkps.spark;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.spark.coord.CoordinatorClient;
import java.time.Duration;
import org.apache.spark.BarrierTaskContext;

/**
 * Every barrier call of SparkPS lives here.
 *
 * <p>Caution: all tasks of a barrier stage must make the same barrier calls in the same order, on
 * every path, or they wait for each other until Spark's barrier timeout. SparkPS makes two (plus
 * those of the worker function, {@link #user}, which every worker makes equally often), and
 * a task that fails makes no more (Spark then kills the others of the attempt):
 * <ol>
 *   <li>{@link #rendezvous} at the start of each worker task, after the coordinator confirmed that
 *       every worker of the stage attempt has registered (a wait bounded by our own timeout, which
 *       names the missing ones);
 *   <li>{@link #finish} at the end of each successful worker function, so that no task's output is
 *       committed while another can still fail: otherwise Spark may keep a finished task's output
 *       and retry only the failed one, a barrier attempt with fewer workers than the run has.
 * </ol>
 */
final class BarrierSync {
  private BarrierSync() {}

  /** How long one wait on the coordinator lasts before the task checks whether Spark killed it. */
  private static final Duration SLICE = Duration.ofSeconds(2);

  /**
   * Waits until all workers of this stage attempt are present, at most {@code timeout}; gives up
   * early when Spark kills the task or another worker of the attempt has failed.
   */
  static void rendezvous(BarrierTaskContext context, CoordinatorClient coordinator, Duration timeout, int numWorkers) {
    int tasks = context.getTaskInfos().length;
    if (tasks != numWorkers) {
      throw new IllegalStateException("stage attempt " + context.stageAttemptNumber() + " runs " + tasks + " of the "
          + numWorkers + " workers: Spark retried only part of the barrier stage, which SparkPS cannot train with");
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Duration left = Duration.ofNanos(deadline - System.nanoTime());
      try {
        coordinator.awaitWorkers(context.stageAttemptNumber(), left.compareTo(SLICE) < 0 ? left : SLICE);
        break;
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED || System.nanoTime() >= deadline) {
          throw e;
        }
        context.killTaskIfInterrupted();
      }
    }
    context.barrier();
  }

  /** Waits until every worker of this attempt has finished its function successfully. */
  /** A barrier the worker function asked for ({@link WorkerContext#barrier()}). */
  static void user(BarrierTaskContext context) {
    context.barrier();
  }

  static void finish(BarrierTaskContext context) {
    context.barrier();
  }
}
