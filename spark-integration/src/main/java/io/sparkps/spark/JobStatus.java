package io.sparkps.spark;

/** The lifecycle of a training job. */
public enum JobStatus {
  /** Created, not started. */
  PENDING,
  /** Preflight, coordinator and ps tasks starting. */
  LAUNCHING,
  /** The barrier stage is running. */
  RUNNING,
  /** Finished with results. */
  SUCCEEDED,
  /** Finished with an error. */
  FAILED,
  /** Cancelled by the user. */
  CANCELLED;

  /** Whether the job has ended. */
  public boolean isDone() {
    return this == SUCCEEDED || this == FAILED || this == CANCELLED;
  }
}
