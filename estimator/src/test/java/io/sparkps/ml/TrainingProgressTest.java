package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TrainingProgressTest {
  private static TaskProgress worker(Role role, int index, long step, double loss) {
    return new TaskProgress(role, index, "h", "1", 0, step, step * 32, Map.of("loss", loss), "", 0);
  }

  @Test
  void theStepShown_isTheSlowestWorkers_withTheEpochMeanLossAndEvaluation() {
    TrainingProgress p = new TrainingProgress(100, 50);
    assertTrue(p.accept(worker(Role.CHIEF, 0, 60, 0.5)));
    assertTrue(p.accept(worker(Role.WORKER, 1, 52, 0.7)));
    assertFalse(p.accept(new TaskProgress(Role.PS, 0, "h", "1", 0, 0, 0, Map.of(), "serving", 0)));
    assertFalse(p.accept(new TaskProgress(Role.WORKER, 1, "h", "1", 0, 99, 0, Map.of(), "status line", 0)),
        "a status line without metrics does not move the step");
    assertTrue(p.accept(new TaskProgress(Role.EVALUATOR, 0, "h", "1", 0, 40, 0, Map.of("accuracy", 0.8125), "", 0)));
    assertEquals(52, p.step());
    String line = p.line();
    assertTrue(line.startsWith("[sparkps] step 52/100 (52%) epoch 2 loss 0.6000 "), line);
    assertTrue(line.contains(" examples/s eval accuracy 0.8125, ETA "), line);
    assertFalse(line.endsWith("succeeded"), line);
    p.onEnd(JobStatus.SUCCEEDED, null);
    assertTrue(p.line().endsWith(" - succeeded"), p.line());
    assertEquals(JobStatus.SUCCEEDED, p.end());
  }

  @Test
  void beforeAnyStep_theEtaIsUnknown() {
    TrainingProgress p = new TrainingProgress(10, 5);
    assertTrue(p.line().startsWith("[sparkps] step 0/10 (0%) epoch 1 loss NaN"), p.line());
    assertTrue(p.line().endsWith("ETA ?"), p.line());
  }
}
