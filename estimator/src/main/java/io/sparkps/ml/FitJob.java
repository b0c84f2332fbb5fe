package io.sparkps.ml;

import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.spark.ClusterView;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.TrainingJob;
import java.time.Duration;
import java.util.List;
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
  /** How long a fit's end waits for its MLflow run to be ended (every metric sent first). */
  private static final Duration TRACKING_END = Duration.ofSeconds(75);

  FitJob(Dl4jTrainer.Launch launch, io.sparkps.ml.tracking.MlflowTracking tracking,
      io.sparkps.ml.tracking.TensorBoardLogging tensorboard, Function<RunResult<float[]>, Dl4jModel> toModel) {
    this.job = launch.job();
    this.tracking = tracking;
    this.tensorboard = tensorboard;
    this.toModel = toModel;
    this.totalSteps = launch.totalSteps();
    this.stepsPerEpoch = launch.stepsPerEpoch();
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
    Dl4jModel model = null;
    try {
      model = toModel.apply(job.join());
      return model;
    } finally {
      trackingEnded(model);
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
   * ended, so a reader finds them whole, and logs the trained model's summary as the MLflow run's
   * artifact {@code summary.json}.
   */
  private void trackingEnded(Dl4jModel model) throws InterruptedException {
    if (!job.status().isDone()) {
      return;
    }
    if (tensorboard != null && !tensorboard.awaitClosed(TRACKING_END)) {
      org.slf4j.LoggerFactory.getLogger(FitJob.class).warn("TensorBoard: the events of {} were not closed within {} s "
          + "of the fit's end", tensorboard.dir(), TRACKING_END.toSeconds());
    }
    if (tracking == null) {
      return;
    }
    if (!tracking.awaitEnd(TRACKING_END)) {
      org.slf4j.LoggerFactory.getLogger(FitJob.class).warn("MLflow: run {} was not ended within {} s of the fit's "
          + "end; it is ended in the background", tracking.runId(), TRACKING_END.toSeconds());
    }
    if (model != null && model.summary() != null) {
      tracking.logArtifact("summary.json", model.summary().toJson().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
  }

  /** Waits at most {@code timeout} for the model; see {@link TrainingJob#get(Duration)} for the failures. */
  public Dl4jModel get(Duration timeout) throws TimeoutException, InterruptedException {
    Dl4jModel model = null;
    try {
      model = toModel.apply(job.get(timeout));
      return model;
    } finally {
      trackingEnded(model);
    }
  }
}
