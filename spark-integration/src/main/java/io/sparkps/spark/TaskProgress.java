package io.sparkps.spark;

import java.util.Map;

/**
 * The latest progress a task reported.
 *
 * @param role the task's role
 * @param index the task's index within its role
 * @param host where it runs
 * @param executor the Spark executor it runs in ("driver" in local mode)
 * @param attempt its stage attempt (workers) or task attempt (ps, evaluator)
 * @param step the step it reported
 * @param examples examples it processed
 * @param metrics named values it reported (loss, accuracy, ...)
 * @param message a free-form status line
 * @param ageMillis how long ago it reported
 * @param timeMillis when the task recorded it (its host's clock, ms since the epoch; 0 when unknown)
 */
public record TaskProgress(Role role, int index, String host, String executor, int attempt, long step, long examples,
    Map<String, Double> metrics, String message, long ageMillis, long timeMillis) {
  /** A report whose time is unknown. */
  public TaskProgress(Role role, int index, String host, String executor, int attempt, long step, long examples,
      Map<String, Double> metrics, String message, long ageMillis) {
    this(role, index, host, executor, attempt, step, examples, metrics, message, ageMillis, 0);
  }
}
