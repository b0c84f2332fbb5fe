package io.sparkps.spark;

import io.sparkps.spark.recovery.PsRecovery;
import java.time.Duration;
import java.util.List;

/**
 * What a finished run returns.
 *
 * @param results each worker's return value, by worker index
 * @param evaluatorHistory every progress report of the evaluator, oldest first
 * @param workerHistory every progress report of the workers, oldest first
 * @param stageAttempts how many attempts the barrier stage took (1 without retries)
 * @param recoveredFailures failures of earlier stage attempts that a retry recovered from, and the
 *     evaluator's failure (training goes on without it), each naming its task and remote cause
 * @param elapsed wall time from launch to the end of training
 * @param psRecoveries the ps tasks lost during the run and how each was replaced and refilled
 * @param <R> the workers' result type
 */
public record RunResult<R>(List<R> results, List<TaskProgress> evaluatorHistory, List<TaskProgress> workerHistory,
    int stageAttempts, List<String> recoveredFailures, Duration elapsed, List<PsRecovery> psRecoveries) {
  /** The chief's (worker 0's) result. */
  public R chief() {
    return results.get(0);
  }
}
