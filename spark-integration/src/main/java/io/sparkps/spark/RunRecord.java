package io.sparkps.spark;

import io.sparkps.spark.recovery.PsRecovery;
import java.time.Duration;
import java.util.List;

/**
 * Everything a run did, whatever its end: live while it goes on, final once it has ended (see
 * {@link TrainingJob#record()}). What a run's {@code summary.json} and the Spark UI's SparkPS tab
 * are made of.
 *
 * @param runId the run's id
 * @param name the run's name (its Spark job groups' description)
 * @param status where it stands or how it ended
 * @param cause why it failed or was cancelled (the first line of its error), else null
 * @param startedMillis when it started (ms since the epoch)
 * @param elapsed time since it started, or its whole length once ended
 * @param stageAttempts each attempt of the barrier stage and what ended it
 * @param psRecoveries the ps tasks lost and how each came back
 * @param workerHistory the workers' recorded steps and status lines, oldest first
 * @param evaluatorHistory the evaluator's reports, oldest first
 * @param recordsNotKept worker steps the driver does not hold (thinned past its bound, or dropped
 *     by a task that could not reach it); 0 for a complete history
 */
public record RunRecord(String runId, String name, JobStatus status, String cause, long startedMillis,
    Duration elapsed, List<StageAttempt> stageAttempts, List<PsRecovery> psRecoveries,
    List<TaskProgress> workerHistory, List<TaskProgress> evaluatorHistory, long recordsNotKept) {

  /**
   * An attempt of the barrier stage.
   *
   * @param attempt its number (from 0)
   * @param endedBy what ended it: the failed task and its error, or null for the attempt that
   *     completed (or still runs)
   */
  public record StageAttempt(int attempt, String endedBy) {}

  /** The furthest step each worker reported, by worker index. */
  public java.util.Map<Integer, Long> stepsDone() {
    java.util.Map<Integer, Long> out = new java.util.TreeMap<>();
    workerHistory.forEach(p -> out.merge(p.index(), p.step(), Math::max));
    return out;
  }
}
