package io.sparkps.ml;

import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.spark.ClusterView;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.TrainingJob;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * A {@link Dl4jEstimator#fitAsync} in progress: the runtime's job handle (status, progress,
 * inspect, cancel) whose result is the trained {@link Dl4jModel}.
 */
public final class FitJob {
  private final TrainingJob<float[]> job;
  private final Function<RunResult<float[]>, Dl4jModel> toModel;
  private final long totalSteps;
  private final int stepsPerEpoch;
  private final io.sparkps.ml.tracking.MlflowTracking tracking;
  private final io.sparkps.ml.tracking.TensorBoardLogging tensorboard;
  /** How long a fit's end waits for its TensorBoard file to be closed. */
  private static final Duration TENSORBOARD_END = Duration.ofSeconds(75);
  /**
   * How long a fit's end waits for its MLflow run to be ended: every metric sent, then the model
   * uploaded (a large model takes a while).
   */
  private static final Duration TRACKING_END = Duration.ofMinutes(10);
  /** The trained model, made once from the run's result (the MLflow tracker may make it first). */
  private Dl4jModel model;

  FitJob(Dl4jTrainer.Launch launch, io.sparkps.ml.tracking.MlflowTracking tracking,
      io.sparkps.ml.tracking.TensorBoardLogging tensorboard, Function<RunResult<float[]>, Dl4jModel> toModel,
      org.apache.spark.sql.SparkSession spark) {
    this.job = launch.job();
    this.tracking = tracking;
    this.tensorboard = tensorboard;
    this.toModel = toModel;
    this.totalSteps = launch.totalSteps();
    this.stepsPerEpoch = launch.stepsPerEpoch();
    if (tracking != null) {
      // the run's last words in MLflow, before it is ended: the model and its summary
      tracking.beforeEnd(status -> {
        if (status != JobStatus.SUCCEEDED) {
          return;
        }
        try {
          Dl4jModel trained = model(job.join());
          tracking.logArtifact("summary.json", trained.summary().toJson().getBytes(
              java.nio.charset.StandardCharsets.UTF_8));
          tracking.logSparkModel("model", trained, spark, Map.of("sparkpsRunId", job.runId()));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
    }
  }

  private synchronized Dl4jModel model(RunResult<float[]> result) {
    if (model == null) {
      model = toModel.apply(result);
    }
    return model;
  }

  /** The steps each worker takes in all (a resumed run starts part-way). */
  public long totalSteps() {
    return totalSteps;
  }

  /** The steps of one epoch over a worker's partition. */
  public int stepsPerEpoch() {
    return stepsPerEpoch;
  }

  /** The run's id (its Spark job groups are {@code sparkps-<id>-...}). */
  public String runId() {
    return job.runId();
  }

  /** Registers a listener for every progress report of the run, live, and its end. */
  public FitJob addListener(io.sparkps.spark.ProgressListener listener) {
    job.addListener(listener);
    return this;
  }

  /** Where the run stands. */
  public JobStatus status() {
    return job.status();
  }

  /** The latest progress of every task (step, examples, loss). */
  public List<TaskProgress> progress() {
    return job.progress();
  }

  /** The ps tasks lost so far and how each came back (live; no call to the ps shards). */
  public List<io.sparkps.spark.recovery.PsRecovery> psRecoveries() {
    return job.psRecoveries();
  }

  /** Roles, hosts, attempts and the variables with their versions. */
  public ClusterView inspect() {
    return job.inspect();
  }

  /** What the run did so far, or in all once ended, whatever its end ({@link TrainingJob#record()}). */
  public io.sparkps.spark.RunRecord record() {
    return job.record();
  }

  /** Cancels training. */
  public void cancel() {
    job.cancel();
  }

  /** Waits for the model however long training takes (each phase of the run has its own bounds). */
  public Dl4jModel join() throws InterruptedException {
    Dl4jModel trained = null;
    try {
      trained = model(job.join());
      return trained;
    } finally {
      trackingEnded();
    }
  }

  /** The MLflow run this fit logs to, or null when it is not tracked. */
  public String mlflowRunId() {
    return tracking == null ? null : tracking.runId();
  }

  /**
   * Uploads {@code content} as the artifact {@code path} of this fit's MLflow run (the command line's
   * {@code report.html}); whether it was (false when the fit is not tracked, or the server did not
   * take it, which is logged).
   */
  public boolean logMlflowArtifact(String path, byte[] content) throws InterruptedException {
    return tracking != null && tracking.logArtifact(path, content);
  }

  /**
   * Once the run ended: waits (bounded) for its TensorBoard file to be closed and its MLflow run to be
   * ended (the model and its summary logged first), so a reader finds them whole.
   */
  private void trackingEnded() throws InterruptedException {
    if (!job.status().isDone()) {
      return;
    }
    if (tensorboard != null && !tensorboard.awaitClosed(TENSORBOARD_END)) {
      org.slf4j.LoggerFactory.getLogger(FitJob.class).warn("TensorBoard: the events of {} were not closed within {} s "
          + "of the fit's end", tensorboard.dir(), TENSORBOARD_END.toSeconds());
    }
    if (tracking != null && !tracking.awaitEnd(TRACKING_END)) {
      org.slf4j.LoggerFactory.getLogger(FitJob.class).warn("MLflow: run {} was not ended within {} s of the fit's "
          + "end (its metrics and model still being sent); it is ended in the background", tracking.runId(),
          TRACKING_END.toSeconds());
    }
  }

  /** Waits at most {@code timeout} for the model; see {@link TrainingJob#get(Duration)} for the failures. */
  public Dl4jModel get(Duration timeout) throws TimeoutException, InterruptedException {
    Dl4jModel trained = null;
    try {
      trained = model(job.get(timeout));
      return trained;
    } finally {
      trackingEnded();
    }
  }
}
