package io.sparkps.spark;

import java.util.Map;

/** Where a task reports its progress; the driver sees the latest report within a heartbeat. */
public interface ProgressReporter {
  /** Reports the step reached, examples processed so far, and named metrics (e.g. "loss"). */
  void report(long step, long examples, Map<String, Double> metrics);

  /** Sets a free-form status line. */
  void message(String message);

  /**
   * Sends the latest report now rather than with the next heartbeat, so that a task reporting
   * faster than the heartbeats (an evaluator scoring saved snapshots) loses none to the next one.
   */
  default void flush() {}
}
