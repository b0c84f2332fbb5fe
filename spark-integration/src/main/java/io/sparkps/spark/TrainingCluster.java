package io.sparkps.spark;

import java.time.Duration;
import java.util.Objects;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Runs a function on every worker of a training cluster inside a Spark application, like
 * TensorFlowOnSpark's {@code TFCluster.run}: the data is split into one partition per worker,
 * and each worker gets its partition, its role, and a client of the run's parameter servers.
 *
 * <pre>{@code
 * TrainingCluster cluster = new TrainingCluster(spark, ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build());
 * RunResult<Float> r = cluster.run(rows, ctx -> { ...; return loss; });
 * }</pre>
 *
 * Preflight checks run before anything launches and throw at once: dynamic allocation must be
 * off and the cluster must have a task slot for every ps, worker and evaluator.
 */
public final class TrainingCluster {
  private final JavaSparkContext sc;
  private final ClusterSpec spec;
  private EvaluatorFunction evaluator;
  private InputPlacement placement;

  /** A cluster described by {@code spec} on {@code spark}'s context. */
  public TrainingCluster(SparkSession spark, ClusterSpec spec) {
    this(JavaSparkContext.fromSparkContext(spark.sparkContext()), spec);
  }

  /** A cluster described by {@code spec} on {@code sc}. */
  public TrainingCluster(JavaSparkContext sc, ClusterSpec spec) {
    this.sc = Objects.requireNonNull(sc, "sc");
    this.spec = Objects.requireNonNull(spec, "spec");
  }

  /** Runs {@code evaluator} in a job of its own alongside training (the spec must ask for an evaluator). */
  public TrainingCluster withEvaluator(EvaluatorFunction evaluator) {
    if (!spec.hasEvaluator()) {
      throw new IllegalArgumentException("the ClusterSpec has no evaluator: build it with optEvaluator(true)");
    }
    this.evaluator = Objects.requireNonNull(evaluator, "evaluator");
    return this;
  }

  /**
   * Gives the input partitions to the workers as {@code placement} groups them (see
   * {@link InputPlacement#plan}), without a shuffle, instead of shuffling input that does not
   * have one partition per worker already. The next run's input must have the partitions it was
   * planned for.
   */
  public TrainingCluster withPlacement(InputPlacement placement) {
    if (placement != null && placement.groups().length != spec.numWorkers()) {
      throw new IllegalArgumentException("the placement is for " + placement.groups().length + " workers but the "
          + "ClusterSpec has " + spec.numWorkers() + ": plan it with InputPlacement.plan(rows, " + spec.numWorkers()
          + ")");
    }
    this.placement = placement;
    return this;
  }

  /** Runs {@code function} on every worker and waits for the results. */
  public <T, R> RunResult<R> run(JavaRDD<T> data, WorkerFunction<T, R> function) throws InterruptedException {
    return runAsync(data, function).join();
  }

  /** Runs {@code function} on every worker over a DataFrame's rows and waits for the results. */
  public <R> RunResult<R> run(Dataset<Row> data, WorkerFunction<Row, R> function) throws InterruptedException {
    return run(data.javaRDD(), function);
  }

  /** Starts the run and returns at once with its handle; preflight failures throw here. */
  public <T, R> TrainingJob<R> runAsync(JavaRDD<T> data, WorkerFunction<T, R> function) {
    return runAsync(data, function, null);
  }

  /**
   * As {@link #runAsync(JavaRDD, WorkerFunction)}; when the chief returns null, its result is
   * {@code chiefResult} applied on the driver to a client of the ps shards once every worker has
   * returned, before the shards stop (a failure there fails the run). Large results, such as a
   * model's parameters, then come straight from the shards instead of through Spark's task results.
   */
  public <T, R> TrainingJob<R> runAsync(JavaRDD<T> data, WorkerFunction<T, R> function,
      java.util.function.Function<io.sparkps.ps.PsClient, R> chiefResult) {
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(function, "function");
    if (spec.hasEvaluator() && evaluator == null) {
      throw new IllegalArgumentException("the ClusterSpec asks for an evaluator: pass its function with withEvaluator(...)");
    }
    // Executors of a cluster register over time; local mode has all its slots at once.
    Duration executorWait = sc.isLocal() ? Duration.ZERO : Duration.ofSeconds(Math.min(60, spec.psStartTimeout().toSeconds()));
    RoleProfiles profiles = RoleProfiles.of(sc.sc());
    Preflight.check(sc.sc(), spec, executorWait, profiles);
    if (placement != null && placement.partitions() != data.getNumPartitions()) {
      throw new IllegalArgumentException("the placement was planned for " + placement.partitions() + " input "
          + "partitions but the data has " + data.getNumPartitions() + ": plan it from this data's partitions");
    }
    TrainingJob<R> job = new TrainingJob<>(sc, spec, data, function, evaluator, placement, chiefResult, profiles);
    job.start();
    return job;
  }

  /** {@link #runAsync(JavaRDD, WorkerFunction)} over a DataFrame's rows. */
  public <R> TrainingJob<R> runAsync(Dataset<Row> data, WorkerFunction<Row, R> function) {
    return runAsync(data.javaRDD(), function);
  }
}
