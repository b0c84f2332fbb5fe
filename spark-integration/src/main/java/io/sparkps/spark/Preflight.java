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

  static void check(SparkContext sc, ClusterSpec spec, Duration executorWait, RoleProfiles profiles) {
    SparkConf conf = sc.getConf();
    if (conf.getBoolean("spark.dynamicAllocation.enabled", false)) {
      throw new IllegalStateException("SparkPS runs its workers in a barrier stage, which Spark refuses while "
          + "dynamic allocation is on: set spark.dynamicAllocation.enabled=false (and size the executors for "
          + spec.slotsNeeded() + " concurrent tasks)");
    }
    long deadline = System.nanoTime() + executorWait.toNanos();
    String shortfall = shortfall(sc, spec, profiles);
    while (shortfall != null && System.nanoTime() < deadline) {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      shortfall = shortfall(sc, spec, profiles);
    }
    if (shortfall != null) {
      throw new IllegalStateException(shortfall + " (after waiting " + executorWait.toSeconds() + " s for executors): "
          + "add executors or cores, or run fewer workers or ps tasks");
    }
  }

  /** What the cluster lacks to run every role at once, or null. */
  private static String shortfall(SparkContext sc, ClusterSpec spec, RoleProfiles profiles) {
    String roles = spec.numPs() + " ps + " + spec.numWorkers() + " workers" + (spec.hasEvaluator() ? " + 1 evaluator"
        : "");
    if (!profiles.any()) {
      int needed = spec.slotsNeeded();
      int slots = slots(sc);
      return slots >= needed ? null : "the run needs " + needed + " task slots at once (" + roles + ") but the "
          + "cluster has " + slots + " (executor cores / spark.task.cpus)";
    }
    // With roles of different asks: each role's tasks must fit, and all of their cores together.
    int taskCpus = sc.getConf().getInt("spark.task.cpus", 1);
    long cores = sc.maxNumConcurrentTasks(oneCore(sc));
    long asked = 0;
    for (Role role : new Role[] {Role.PS, Role.WORKER, Role.EVALUATOR}) {
      int count = role == Role.PS ? spec.numPs() : role == Role.WORKER ? spec.numWorkers() : spec.hasEvaluator() ? 1 : 0;
      RoleProfiles.Ask ask = profiles.ask(role);
      asked += (long) count * (ask == null ? taskCpus : ask.cpus());
      if (ask != null && count > 0) {
        int fit = sc.maxNumConcurrentTasks(profiles.profile(role));
        if (fit < count) {
          return "the run needs " + count + " " + role.name().toLowerCase() + " tasks of " + ask + " each at once, "
              + "but the cluster's executors can run " + fit;
        }
      }
    }
    return asked <= cores ? null : "the run's tasks ask for " + asked + " cores at once (" + roles + ") but the "
        + "cluster's executors have " + cores;
  }

  /** A task of one core and nothing else: as many fit as the executors have cores. */
  private static org.apache.spark.resource.ResourceProfile oneCore(SparkContext sc) {
    return RoleProfiles.registered(sc, new org.apache.spark.resource.ResourceProfileBuilder()
        .require(new org.apache.spark.resource.TaskResourceRequests().cpus(1)).build());
  }

  /** Tasks the cluster can run at once with the default resource profile. */
  static int slots(SparkContext sc) {
    return sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
  }
}
