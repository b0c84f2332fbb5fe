package io.sparkps.spark;

import io.sparkps.spark.coord.Registry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The Spark jobs of a run's ps tasks: one job of one task per ps, each launch in a job group of
 * its own ({@code sparkps-<run>-ps-<index>[-<launch>]}: Spark cancels a group asynchronously, so a
 * replacement in the same group could go with it). Launches come from the run's lifecycle thread
 * and the supervisor's relaunches, under this object's lock.
 */
final class PsJobs {
  private final JavaSparkContext sc;
  private final ClusterSpec spec;
  private final String runId;
  private final RoleProfiles profiles;
  /** Each ps's job, by ps index; a lost ps's entry is its replacement's job. */
  private final Map<Integer, JavaFutureAction<Void>> jobs = new ConcurrentHashMap<>();
  private final Map<Integer, Integer> launches = new ConcurrentHashMap<>();
  private volatile TaskEnv env;
  private boolean cancelled;

  PsJobs(JavaSparkContext sc, ClusterSpec spec, String runId, RoleProfiles profiles) {
    this.profiles = profiles;
    this.sc = sc;
    this.spec = spec;
    this.runId = runId;
  }

  /** Launches every ps and waits (bounded) until each registered; returns their addresses by index. */
  List<String> start(TaskEnv env, Registry registry, BooleanSupplier cancelled) throws InterruptedException {
    this.env = env;
    IntStream.range(0, spec.numPs()).forEach(this::launch);
    long deadline = System.nanoTime() + spec.psStartTimeout().toNanos();
    while (true) {
      List<Integer> missing = registry.awaitPs(200);
      if (missing.isEmpty()) {
        return registry.psAddresses();
      }
      if (!registry.failures().isEmpty()) {
        throw new IllegalStateException("a ps task failed while starting");
      }
      for (int i : missing) {
        if (jobs.get(i).isDone()) {
          throw new IllegalStateException("the job of ps " + i + " ended before it registered", causeOf(jobs.get(i)));
        }
      }
      if (cancelled.getAsBoolean()) {
        throw new CancellationException("cancelled while the ps tasks started");
      }
      if (System.nanoTime() > deadline) {
        throw new TrainingFailure("ps " + missing + " did not register within " + spec.psStartTimeout().toMillis()
            + " ms; " + registry.psAddresses().stream().filter(a -> a != null).count() + " of " + spec.numPs()
            + " did. Likely causes: no free task slot for them (other jobs hold the executors), or they are stuck"
            + " starting: see the jobs 'sparkps ps N' in the Spark UI and their executors' logs", Role.PS, missing.get(0),
            null, 0, null, null);
      }
    }
  }

  /** Launches (or relaunches) ps {@code index} as a job of its own. */
  synchronized void launch(int index) {
    if (cancelled) {
      return;
    }
    int launch = launches.merge(index, 1, Integer::sum) - 1;
    sc.setJobGroup(group(index), "sparkps ps " + index + (launch == 0 ? "" : " (relaunch " + launch + ")"), true);
    try {
      jobs.put(index, profiles.apply(Role.PS, sc.parallelize(List.of(index), 1))
          .foreachPartitionAsync(new PsTask(env, launch)));
    } finally {
      sc.clearJobGroup();
    }
  }

  /** Replaces ps {@code index}: its job is cancelled (a hung task with it) and a new one launched. */
  synchronized void relaunch(int index) {
    sc.cancelJobGroup(group(index));
    launch(index);
  }

  /** How many times ps {@code index} was launched. */
  int launches(int index) {
    return launches.getOrDefault(index, 0);
  }

  /** How ps {@code index}'s latest task ended ({@code ""} or {@code " (its cause)"}), or null while it runs. */
  String ended(int index) {
    JavaFutureAction<Void> job = jobs.get(index);
    if (job == null || !job.isDone()) {
      return null;
    }
    try {
      job.get(0, TimeUnit.MILLISECONDS);
      return "";
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      return " (" + (c == null ? e : c).toString().lines().findFirst().orElse("") + ")";
    } catch (Exception e) {
      return " (" + e + ")";
    }
  }

  /** Lets the ps tasks stop on their own until {@code deadline} (they were told to), else cancels their jobs. */
  void stop(long deadline) {
    jobs.forEach((index, job) -> {
      try {
        job.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        sc.cancelJobGroup(group(index));
      } catch (Exception e) {
        sc.cancelJobGroup(group(index));
      }
    });
  }

  /** Cancels every ps job; none is launched from now on. */
  synchronized void cancelAll() {
    cancelled = true;
    jobs.keySet().forEach(i -> sc.cancelJobGroup(group(i)));
  }

  /** The job group of ps {@code index}'s latest launch. */
  private String group(int index) {
    int launch = launches.getOrDefault(index, 1) - 1;
    return Launcher.group(runId, "ps-" + index + (launch == 0 ? "" : "-" + launch));
  }

  private static Throwable causeOf(JavaFutureAction<Void> job) {
    try {
      job.get(1, TimeUnit.SECONDS);
      return null;
    } catch (Exception e) {
      return e.getCause() != null ? e.getCause() : e;
    }
  }

}
