package io.sparkps.spark;

import io.sparkps.spark.coord.Registry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Submits a run's Spark jobs (ps tasks, evaluator, barrier stage), each in a job group of its own
 * so the Spark UI names them and they can be cancelled apart; {@link FailureExplainer} explains a
 * failed run.
 */
final class Launcher<T, R> implements Supervisor.Actions {
  private final JavaSparkContext sc;
  private final ClusterSpec spec;
  private final String runId;
  private final JavaRDD<T> data;
  private final WorkerFunction<T, R> function;
  private final EvaluatorFunction evaluator;
  private final InputPlacement placement;
  /** Whether the workers read their groups of input partitions where they lie. */
  private volatile boolean grouped;
  /** Each ps's job (one task), by ps index; a lost ps's entry is its replacement's job. */
  private final Map<Integer, JavaFutureAction<Void>> psJobs = new java.util.concurrent.ConcurrentHashMap<>();
  private final Map<Integer, Integer> psLaunches = new java.util.concurrent.ConcurrentHashMap<>();
  private volatile TaskEnv psEnv;
  private volatile JavaFutureAction<Void> evaluatorJob;
  private volatile JavaRDD<T> partitioned;
  private boolean cancelled;

  private static final Logger LOG = LoggerFactory.getLogger(Launcher.class);
  /** How often the driver looks for a failure that ends the run while the barrier stage runs. */
  private static final long FAILURE_POLL_MILLIS = 100;
  Launcher(JavaSparkContext sc, ClusterSpec spec, String runId, JavaRDD<T> data, WorkerFunction<T, R> function,
      EvaluatorFunction evaluator, InputPlacement placement) {
    this.placement = placement;
    this.sc = sc;
    this.spec = spec;
    this.runId = runId;
    this.data = data;
    this.function = function;
    this.evaluator = evaluator;
  }

  private String group(String role) {
    return "sparkps-" + runId + "-" + role;
  }

  @Override
  public String runId() {
    return runId;
  }

  /**
   * Asks the cluster manager to kill executor {@code executorId} and start another in its place
   * (what Spark itself does once an executor misses its heartbeats for {@code spark.network.timeout}):
   * a hung executor's task slots are free again at once. Not in local mode (the executor is the
   * driver) and not where the scheduler cannot kill executors; returns whether it was asked.
   */
  @Override
  public boolean killExecutor(String executorId, String reason) {
    if (executorId == null || executorId.isEmpty() || "driver".equals(executorId) || sc.sc().isLocal()) {
      return false;
    }
    boolean asked = sc.sc().killAndReplaceExecutor(executorId);
    LOG.info("SparkPS run {}: {} executor {} to be killed and replaced: {}", runId, asked ? "asked for" : "could not ask for",
        executorId, reason);
    return asked;
  }

  /** Kills the task attempts of the given Spark task ids (Spark then retries their barrier stage). */
  @Override
  public void killTasks(List<Long> taskIds, String reason) {
    taskIds.forEach(id -> sc.sc().killTaskAttempt(id, true, reason));
  }

  /**
   * Launches (or relaunches) ps {@code index} as a job of its own, in a job group of its own per
   * launch (Spark cancels a group asynchronously: a replacement in the same group could go with it).
   */
  synchronized void launchPs(int index) {
    if (cancelled) {
      return;
    }
    int launch = psLaunches.merge(index, 1, Integer::sum) - 1;
    sc.setJobGroup(psGroup(index), "sparkps ps " + index + (launch == 0 ? "" : " (relaunch " + launch + ")"), true);
    try {
      psJobs.put(index, sc.parallelize(List.of(index), 1).foreachPartitionAsync(new PsTask(psEnv, launch)));
    } finally {
      sc.clearJobGroup();
    }
  }

  private String psGroup(int index) {
    int launch = psLaunches.getOrDefault(index, 1) - 1;
    return group("ps-" + index + (launch == 0 ? "" : "-" + launch));
  }

  /** Replaces ps {@code index}: its job is cancelled (a hung task with it) and a new one launched. */
  @Override
  public synchronized void relaunchPs(int index) {
    sc.cancelJobGroup(psGroup(index));
    launchPs(index);
  }

  /** How many times ps {@code index} was launched. */
  @Override
  public int psLaunches(int index) {
    return psLaunches.getOrDefault(index, 0);
  }

  @Override
  public String psEnded(int index) {
    JavaFutureAction<Void> job = psJobs.get(index);
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

  /** Launches the ps jobs and waits (bounded) until every ps registered; returns their addresses by index. */
  List<String> startPs(TaskEnv env, Registry registry, BooleanSupplier cancelled) throws InterruptedException {
    psEnv = env;
    IntStream.range(0, spec.numPs()).forEach(this::launchPs);
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
        if (psJobs.get(i).isDone()) {
          throw new IllegalStateException("the job of ps " + i + " ended before it registered", causeOf(psJobs.get(i)));
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

  void startEvaluator(TaskEnv env) {
    if (evaluator == null) {
      return;
    }
    sc.setJobGroup(group("evaluator"), "sparkps evaluator", true);
    try {
      evaluatorJob = sc.parallelize(List.of(0), 1).foreachPartitionAsync(new EvaluatorTask(env, evaluator));
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
        RDD<Tuple2<Object, Object>> out = partitioned.rdd().barrier()
            .mapPartitions(new WorkerTask<>(env, function), false, pairTag);
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
    while (true) {
      try {
        return job.get(FAILURE_POLL_MILLIS, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.TimeoutException stillRunning) {
        try {
          supervisor.check();
        } catch (TrainingFailure f) {
          sc.cancelJobGroup(group("train"));
          throw new ExecutionException(f);
        }
        if (registry.finalFailure(spec.maxStageAttempts()) != null) {
          sc.cancelJobGroup(group("train"));
          throw new ExecutionException("the barrier stage was stopped: a worker failed in a way another attempt "
              + "would not get past", null);
        }
      }
    }
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

  /** Lets the ps and evaluator tasks stop on their own (they were told to), else cancels their jobs. */
  void stopBackgroundJobs(Duration grace) {
    long deadline = System.nanoTime() + grace.toNanos();
    Map<String, JavaFutureAction<Void>> jobs = new LinkedHashMap<>();
    if (evaluatorJob != null) {
      jobs.put("evaluator", evaluatorJob);
    }
    psJobs.forEach((index, job) -> jobs.put(psGroup(index).substring(group("").length()), job));
    jobs.forEach((role, action) -> {
      try {
        action.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        sc.cancelJobGroup(group(role));
      } catch (Exception e) {
        sc.cancelJobGroup(group(role));
      }
    });
  }

  synchronized void cancelAll() {
    cancelled = true;
    for (String role : List.of("train", "evaluator")) {
      sc.cancelJobGroup(group(role));
    }
    psJobs.keySet().forEach(i -> sc.cancelJobGroup(psGroup(i)));
  }

  private static Throwable causeOf(JavaFutureAction<Void> job) {
    try {
      job.get(1, TimeUnit.SECONDS);
      return null;
    } catch (Exception e) {
      return e.getCause() != null ? e.getCause() : e;
    }
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
