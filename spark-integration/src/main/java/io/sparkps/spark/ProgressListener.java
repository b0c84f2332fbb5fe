package io.sparkps.spark;

/**
 * Receives a run's progress live on the driver, as the coordinator hears it: every record (each
 * worker step at the run's metrics interval, each of the evaluator's reports, status lines), in
 * order, within about 200 ms of the heartbeat that carried it, then the run's end. Called from one daemon thread of the run; a listener that throws is logged and
 * dropped, never failing the run. Register with {@link TrainingJob#addListener}.
 */
public interface ProgressListener {
  /** A task reported new progress (step, examples, metrics or message). */
  void onProgress(TaskProgress progress);

  /** The run ended with {@code status}; {@code failure} is its error when it failed, else null. */
  default void onEnd(JobStatus status, Throwable failure) {}
}
