package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The summary saved with a model keeps what the run lost and how it came back. */
class TrainingSummaryTest {
  @Test
  void psRecoveries_surviveTheJsonRoundTrip() {
    PsRecovery r = new PsRecovery(1, "10.0.0.7:4001", "it was silent: ps 1 on 10.0.0.7 was silent for 20.1 s", 312,
        "10.0.0.9:4017", "worker 0's copy of step 311 [0_W, 1_b]", 313, Duration.ofMillis(2750));
    TaskProgress p = new TaskProgress(Role.CHIEF, 0, "h", "1", 0, 400, 25_600, Map.of("loss", 0.41), "", 0);
    String cause = "worker 1 on h (attempt 0): java.util.concurrent.TimeoutException: worker 1 was silent for 20.2 s";
    TrainingSummary s = new TrainingSummary(List.of(p), List.of(), 2, Duration.ofSeconds(61), List.of(r),
        List.of(cause));
    String json = s.toJson();
    TrainingSummary back = TrainingSummary.fromJson(json);
    assertEquals(List.of(r), back.psRecoveries());
    assertEquals(List.of(cause), back.recoveredFailures(), "why the first stage attempt failed");
    assertEquals(2, back.stageAttempts());
    assertTrue(back.psRecoveries().get(0).toString().startsWith("ps 1 (10.0.0.7:4001) lost at step 312 (it was "
        + "silent"), back.psRecoveries().get(0).toString());
    // A summary saved before recoveries were recorded reads with none.
    TrainingSummary old = TrainingSummary.fromJson(json.replaceAll(",\"psRecoveries\":\\[.*\\]}$", "}"));
    assertEquals(List.of(), old.psRecoveries());
    assertEquals(List.of(), old.recoveredFailures());
    assertEquals(0.41, old.lastLoss(0), 1e-12);
  }

  @Test
  void aLongRunsSavedSummary_keepsEveryKthStepOfEachWorker_andItsLast_withTheirTimes() {
    List<TaskProgress> history = new java.util.ArrayList<>();
    for (int step = 1; step <= 12_345; step++) {
      for (int w = 0; w < 2; w++) {
        history.add(new TaskProgress(w == 0 ? Role.CHIEF : Role.WORKER, w, "h", "1", 0, step, step, Map.of("loss",
            1.0 / step), "", 0, 1_000_000L + step));
      }
    }
    TrainingSummary back = TrainingSummary.fromJson(new TrainingSummary(history, List.of(), 1, Duration.ofSeconds(1),
        List.of()).toJson());
    List<TaskProgress> kept = back.workerHistory();
    assertTrue(kept.size() <= TrainingSummary.MAX_SAVED_WORKER_RECORDS + 2, "kept " + kept.size());
    assertTrue(kept.size() > TrainingSummary.MAX_SAVED_WORKER_RECORDS / 2, "kept " + kept.size());
    for (int w = 0; w < 2; w++) {
      final int worker = w;
      List<Long> steps = kept.stream().filter(p -> p.index() == worker).map(TaskProgress::step).toList();
      assertEquals(1L, steps.get(0));
      assertEquals(12_345L, steps.get(steps.size() - 1), "each worker's last step is kept");
      assertEquals(steps.get(1) - steps.get(0), steps.get(2) - steps.get(1), "evenly spaced");
    }
    assertEquals(1.0 / 12_345, back.lastLoss(1), 1e-15);
    assertEquals(1_000_000L + 12_345, kept.get(kept.size() - 1).timeMillis());
  }
}
