package io.sparkps.spark;

import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.recovery.PsLostTooOftenException;
import io.sparkps.spark.recovery.Supervisor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;
import scala.reflect.ClassTag$;
import scala.reflect.ClassTag;

/**
 * Submits a run's Spark jobs, each in a job group of its own ({@code sparkps-<run>-<role>}) so the
 * Spark UI names them and they can be cancelled apart: the ps tasks ({@link PsJobs}), the
 * evaluator, and the barrier stage of the chief and the workers, which it supervises while it
 * runs; {@link FailureExplainer} explains a failed run.
 */
final class Launcher<T, R> {
  private final JavaSparkContext sc;
  private final ClusterSpec spec;
  private final String runId;
  private final JavaRDD<T> data;
  private final WorkerFunction<T, R> function;
  private final EvaluatorFunction evaluator;
  private final InputPlacement placement;
  /** Whether the workers read their groups of input partitions where they lie. */
  private volatile boolean grouped;
  private final PsJobs ps;
  private final RoleProfiles profiles;
  private volatile JavaFutureAction<Void> evaluatorJob;
  private volatile JavaRDD<T> partitioned;
  private boolean cancelled;

  private static final Logger LOG = LoggerFactory.getLogger(Launcher.class);
  /** How often the driver looks for a failure that ends the run while the barrier stage runs. */
  private static final long FAILURE_POLL_MILLIS = 100;
  Launcher(JavaSparkContext sc, ClusterSpec spec, String runId, JavaRDD<T> data, WorkerFunction<T, R> function,
      EvaluatorFunction evaluator, InputPlacement placement, RoleProfiles profiles) {
    this.placement = placement;
    this.sc = sc;
    this.spec = spec;
    this.runId = runId;
    this.data = data;
    this.function = function;
    this.evaluator = evaluator;
    this.profiles = profiles;
    this.ps = new PsJobs(sc, spec, runId, profiles);
  }

  /** The job group of the run's {@code role} ({@code ps-0}, {@code train}, {@code evaluator}, ...). */
  static String group(String runId, String role) {
    return "sparkps-" + runId + "-" + role;
  }

  private String group(String role) {
    return group(runId, role);
  }

  /** Launches the ps jobs and waits (bounded) until every ps registered; returns their addresses by index. */
  List<String> startPs(TaskEnv env, Registry registry, BooleanSupplier cancelled) throws InterruptedException {
    return ps.start(env, registry, cancelled);
  }

  /** The supervisor of the run whose roles {@code registry} holds, acting on its jobs and executors. */
  Supervisor supervisor(Registry registry) {
    return new Supervisor(new SparkActions(sc, runId, ps), registry, SparkActions.policy(spec));
  }

  void startEvaluator(TaskEnv env) {
    if (evaluator == null) {
      return;
    }
    sc.setJobGroup(group("evaluator"), "sparkps evaluator", true);
    try {
      evaluatorJob = profiles.apply(Role.EVALUATOR, sc.parallelize(List.of(0), 1))
          .foreachPartitionAsync(new EvaluatorTask(env, evaluator));
    } finally {
      sc.clearJobGroup();
    }
  }

  /** Runs the barrier stage (output through a shuffle, so that Spark retries the stage) and returns the results by index. */
  @SuppressWarnings("unchecked")
  List<R> train(TaskEnv env, Registry registry, Supervisor supervisor) throws InterruptedException, ExecutionException {
    JavaFutureAction<List<Tuple2<Object, Object>>> job;
    JavaRDD<T> placed = place();
    synchronized (this) {
      // Submitting under the lock that cancelAll() takes: a cancel either comes first or finds the job.
      if (cancelled) {
        throw new CancellationException("cancelled before the barrier stage started");
      }
      sc.setJobGroup(group("train"), "sparkps train (" + spec.numWorkers() + " workers" + (grouped ? "; " + placement
          : "") + ")", true);
      try {
        partitioned = placed;
        ClassTag<Tuple2<Object, Object>> pairTag = ClassTag$.MODULE$.apply(Tuple2.class);
        ClassTag<Object> objectTag = ClassTag$.MODULE$.apply(Object.class);
        RDD<Tuple2<Object, Object>> out = profiles.apply(Role.WORKER, partitioned.rdd().barrier()
            .mapPartitions(new WorkerTask<>(env, function), false, pairTag));
        job = JavaPairRDD.fromRDD(out, objectTag, objectTag).partitionBy(new HashPartitioner(1)).collectAsync();
      } finally {
        sc.clearJobGroup();
      }
    }
    List<Tuple2<Object, Object>> sorted = new ArrayList<>(awaitTraining(job, registry, supervisor));
    sorted.sort(Comparator.comparingInt(t -> (Integer) t._1()));
    List<R> results = new ArrayList<>(sorted.size());
    sorted.forEach(t -> results.add((R) t._2()));
    return results;
  }

  /**
   * Waits for the barrier stage's job, supervising the roles meanwhile (a lost ps is replaced, a
   * silent worker's stage attempt killed); a failure that another attempt would meet again (or one
   * of the last attempt allowed) cancels it at once instead of letting Spark retry the stage.
   */
  private <X> X awaitTraining(JavaFutureAction<X> job, Registry registry, Supervisor supervisor)
      throws InterruptedException, ExecutionException {
    long idleSince = System.nanoTime();
    while (true) {
      try {
        return job.get(FAILURE_POLL_MILLIS, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException stillRunning) {
        if (registry.currentAttempt() >= 0 || activeTasks(group("train")) > 0) {
          idleSince = System.nanoTime();
        } else if (System.nanoTime() - idleSince > spec.psStartTimeout().toNanos()) {
          // Spark starts a barrier stage's tasks all at once, or waits without end for the room.
          sc.cancelJobGroup(group("train"));
          throw new ExecutionException(new TrainingFailure("the workers' barrier stage had no task running for "
              + spec.psStartTimeout().toSeconds() + " s (the ClusterSpec's psStartTimeout) and no worker registered: "
              + "Spark starts its " + spec.numWorkers() + " tasks only all at once, and the executors have no room "
              + "for them together; other tasks hold their cores or GPUs (this run's ps and evaluator, or other jobs). "
              + "Free executors or cores, or run fewer workers", Role.WORKER, 0, null, 0, null, null));
        }
        try {
          supervisor.check();
        } catch (PsLostTooOftenException e) {
          sc.cancelJobGroup(group("train"));
          throw new ExecutionException(new TrainingFailure(e.getMessage(), Role.PS, e.shard(), null, e.launches(), null,
              null));
        }
        if (registry.finalFailure(spec.maxStageAttempts()) != null) {
          sc.cancelJobGroup(group("train"));
          throw new ExecutionException("the barrier stage was stopped: a worker failed in a way another attempt "
              + "would not get past", null);
        }
      }
    }
  }

  /** Tasks running now in the jobs of {@code group} (the workers' stage and the stages it reads from). */
  private int activeTasks(String group) {
    int active = 0;
    for (int id : sc.statusTracker().getJobIdsForGroup(group)) {
      org.apache.spark.SparkJobInfo job = sc.statusTracker().getJobInfo(id);
      for (int stage : job == null ? new int[0] : job.stageIds()) {
        org.apache.spark.SparkStageInfo info = sc.statusTracker().getStageInfo(stage);
        active += info == null ? 0 : info.numActiveTasks();
      }
    }
    return active;
  }

  /**
   * The data with one partition per worker. With a placement, each worker reads its group of
   * input partitions where they lie (no shuffle), unless they already are one per worker.
   */
  private JavaRDD<T> place() {
    if (placement == null || (placement.identity() && data.getNumPartitions() == spec.numWorkers()
        && PerWorker.samePartitionsUpToShuffle(data.rdd(), spec.numWorkers()))) {
      return PerWorker.of(data, spec.numWorkers());
    }
    if (!GroupedRdd.readable(sc.sc(), data.rdd())) {
      LOG.info("SparkPS run {} shuffles its input: it comes from a shuffle that is not cached (cache it to have it "
          + "read where it lies)", runId);
      return PerWorker.of(data, spec.numWorkers());
    }
    LOG.info("SparkPS run {}: {}", runId, placement);
    grouped = true;
    return JavaRDD.fromRDD(new GroupedRdd<>(data.rdd(), placement.groups(), data.classTag()), data.classTag());
  }

  /** Lets the evaluator finish on its own within {@code grace}, else cancels its job; whether it finished. */
  boolean stopEvaluator(Duration grace) {
    if (evaluatorJob == null) {
      return true;
    }
    try {
      evaluatorJob.get(Math.max(1, grace.toNanos()), TimeUnit.NANOSECONDS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      sc.cancelJobGroup(group("evaluator"));
    } catch (Exception e) {
      sc.cancelJobGroup(group("evaluator"));
    }
    return false;
  }

  /** Lets the evaluator and ps tasks stop on their own within {@code grace} (they were told to), else cancels their jobs. */
  void stopBackgroundJobs(Duration grace) {
    long deadline = System.nanoTime() + grace.toNanos();
    stopEvaluator(Duration.ofNanos(deadline - System.nanoTime()));
    ps.stop(deadline);
  }

  /** Cancels every job of the run; none is submitted from now on. */
  synchronized void cancelAll() {
    cancelled = true;
    for (String role : List.of("train", "evaluator")) {
      sc.cancelJobGroup(group(role));
    }
    ps.cancelAll();
  }

  /** One exception for a failed run: the first task failure, with its remote stack, or Spark's own error. */
  RuntimeException explain(Throwable t, Registry registry) {
    return new FailureExplainer<>(runId, spec, function, this::rowsOf).explain(t, registry);
  }

  /** The rows worker {@code index} trained on, read again in the driver (to recreate its failure). */
  private List<T> rowsOf(int index) {
    if (grouped) {
      java.util.Set<Integer> mine = java.util.Arrays.stream(placement.groups()[index]).boxed()
          .collect(java.util.stream.Collectors.toSet());
      return data.mapPartitionsWithIndex((i, it) -> mine.contains(i) ? it : Collections.<T>emptyIterator(), true)
          .collect();
    }
    JavaRDD<T> source = partitioned != null ? partitioned : PerWorker.of(data, spec.numWorkers());
    return source.mapPartitionsWithIndex((i, it) -> i == index ? it : Collections.<T>emptyIterator(), true).collect();
  }
}
