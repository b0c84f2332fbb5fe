package io.sparkps.cli;

import io.sparkps.ml.FitJob;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.RunRecord;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.util.ShutdownHookManager;

/**
 * Makes sure a command's run leaves its record ({@code summary.json} and {@code report.html})
 * however it ends: by success, by failure, or by the process being told to stop (Ctrl-C, a
 * scheduler's SIGTERM). For the last, a shutdown hook cancels the run, waits for it to stop
 * (bounded), and writes the record with status CANCELLED; it runs before Spark's and Hadoop's own
 * hooks (which stop the context and close the file systems). The record is written once.
 */
final class RunEnding implements AutoCloseable {
  /** Runs before Spark's hook (which stops the SparkContext) and Hadoop's (which closes file systems). */
  private static final int PRIORITY = 100;
  /** How long the hook waits for a cancelled run to stop. */
  private static final long STOP_WAIT_MS = 10_000;

  private final FitJob job;
  private final RunDirectory dir;
  private final RunRecorder recorder;
  private final Runnable hook = this::onShutdown;
  private boolean written;

  RunEnding(FitJob job, RunDirectory dir, RunRecorder recorder) {
    this.job = job;
    this.dir = dir;
    this.recorder = recorder;
    ShutdownHookManager.get().addShutdownHook(hook, PRIORITY);
  }

  /** Writes the record of a run that ended without a model (failed or cancelled). */
  void recordEnd() {
    write(RunSummary.of(job.record()));
  }

  /** Writes {@code summary} and the report from it, unless a record was written already. */
  synchronized void write(Map<String, Object> summary) {
    if (written) {
      return;
    }
    written = true;
    RunRecord r = job.record();
    String survived = RunSummary.survived(r);
    if (survived != null) {
      summary.put("survived", survived);
    }
    String json;
    String report;
    try {
      json = TrainingRun.JSON.writeValueAsString(summary);
      report = Report.html("SparkPS run " + job.runId(), recorder.events(), summary, r);
      dir.write("summary.json", json);
      dir.write("report.html", report);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the run's record in " + dir, e);
    }
    try { // the run's MLflow run, when tracked, gets the same two files
      job.logMlflowArtifact("summary.json", json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      job.logMlflowArtifact("report.html", report.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void onShutdown() {
    if (!job.status().isDone()) {
      job.cancel();
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_WAIT_MS);
      while (!job.status().isDone() && System.nanoTime() < deadline) {
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          break;
        }
      }
    }
    Map<String, Object> summary = RunSummary.of(job.record());
    if (job.status() != JobStatus.CANCELLED && job.status() != JobStatus.FAILED) {
      // trained, or still stopping: the command was stopped before it saved the model and its record
      summary.put("status", JobStatus.CANCELLED.name());
      summary.put("cause", "the command was stopped (" + (job.status() == JobStatus.SUCCEEDED
          ? "after training, before the model was saved" : "the run did not stop within " + STOP_WAIT_MS + " ms")
          + ")");
    }
    write(summary);
    System.err.println("sparkps: stopped; run " + job.runId() + " " + String.valueOf(summary.get("status")).toLowerCase()
        + ", its record: " + dir.uri("summary.json"));
  }

  /** The command has written its record: the hook is no longer needed. */
  @Override
  public void close() {
    try {
      ShutdownHookManager.get().removeShutdownHook(hook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs or ran; it writes nothing once the record is written
    }
  }
}
