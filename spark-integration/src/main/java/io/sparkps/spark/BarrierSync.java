package io.sparkps.spark;

import io.sparkps.spark.coord.CoordinatorClient;
import java.time.Duration;
import org.apache.spark.BarrierTaskContext;

/**
 * Every barrier call of SparkPS lives here.
 *
 * <p>Caution: all tasks of a barrier stage must make the same barrier calls in the same order, on
 * every path, or they wait for each other until Spark's barrier timeout. SparkPS makes exactly
 * one: at the start of each worker task, after the coordinator confirmed that every worker of the
 * stage attempt has registered (a wait bounded by our own timeout, which names the missing ones).
 */
final class BarrierSync {
  private BarrierSync() {}

  /** Waits until all workers of this stage attempt are present. */
  static void rendezvous(BarrierTaskContext context, CoordinatorClient coordinator, Duration timeout) {
    coordinator.awaitWorkers(context.stageAttemptNumber(), timeout);
    context.barrier();
  }
}
