package io.sparkps.spark;

import java.time.Duration;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;

/**
 * Checks on the driver, before anything launches, that the cluster can run the spec: barrier
 * mode without dynamic allocation, and enough task slots for every role at once.
 */
final class Preflight {
  private Preflight() {}

  static void check(SparkContext sc, ClusterSpec spec, Duration executorWait) {
    SparkConf conf = sc.getConf();
    if (conf.getBoolean("spark.dynamicAllocation.enabled", false)) {
      throw new IllegalStateException("SparkPS runs its workers in a barrier stage, which Spark refuses while "
          + "dynamic allocation is on: set spark.dynamicAllocation.enabled=false (and size the executors for "
          + spec.slotsNeeded() + " concurrent tasks)");
    }
    int needed = spec.slotsNeeded();
    long deadline = System.nanoTime() + executorWait.toNanos();
    int slots = slots(sc);
    while (slots < needed && System.nanoTime() < deadline) {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      slots = slots(sc);
    }
    if (slots < needed) {
      throw new IllegalStateException("the run needs " + needed + " task slots at once (" + spec.numPs() + " ps + "
          + spec.numWorkers() + " workers" + (spec.hasEvaluator() ? " + 1 evaluator" : "") + ") but the cluster has "
          + slots + " (executor cores / spark.task.cpus, after waiting " + executorWait.toSeconds()
          + " s for executors): add executors or cores, or run fewer workers or ps tasks");
    }
  }

  /** Tasks the cluster can run at once with the default resource profile. */
  static int slots(SparkContext sc) {
    return sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
  }
}
