package io.sparkps.ml;

import io.sparkps.spark.TaskProgress;
import java.time.Duration;
import java.util.List;

/**
 * What happened while a model trained: every worker's progress reports (step, examples, loss),
 * the evaluator's reports, how many attempts the barrier stage took, and how long it ran. Kept
 * with the model in memory; not saved with it.
 *
 * @param workerHistory the workers' reports, oldest first
 * @param evaluatorHistory the evaluator's reports, oldest first
 * @param stageAttempts attempts of the barrier stage
 * @param elapsed wall time of the run
 */
public record TrainingSummary(List<TaskProgress> workerHistory, List<TaskProgress> evaluatorHistory,
    int stageAttempts, Duration elapsed) {
  /** The last loss each worker reported, by worker index (NaN when none). */
  public double lastLoss(int worker) {
    for (int i = workerHistory.size() - 1; i >= 0; i--) {
      TaskProgress p = workerHistory.get(i);
      if (p.index() == worker && p.metrics().containsKey("loss")) {
        return p.metrics().get("loss");
      }
    }
    return Double.NaN;
  }
}
