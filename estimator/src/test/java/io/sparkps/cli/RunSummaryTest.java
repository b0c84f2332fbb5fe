package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.RunRecord;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What summary.json and report.html say of a run that met faults: what ended each attempt, what it survived. */
class RunSummaryTest {
  private static RunRecord record(JobStatus status, String cause) {
    List<TaskProgress> history = new ArrayList<>();
    for (int step = 1; step <= 40; step++) {
      for (int w = 0; w < 2; w++) {
        history.add(new TaskProgress(w == 0 ? Role.CHIEF : Role.WORKER, w, "h", "1", step > 20 ? 1 : 0, step, step * 64L,
            Map.of("loss", 2.0 / step, "computeMs", 3.0, "pullMs", 1.0), "", 0, 1_000L * step));
      }
    }
    PsRecovery lost = new PsRecovery(1, "10.0.0.2:7001", "its task failed", 12, "10.0.0.3:7001",
        "worker 0's copy of step 12", 12, Duration.ofMillis(4200));
    return new RunRecord("r1", "sparkps", status, cause, 1_000, Duration.ofSeconds(33), List.of(
        new RunRecord.StageAttempt(0, "worker 1 on h: executor lost"), new RunRecord.StageAttempt(1, cause)),
        List.of(lost), history, List.of(), 0);
  }

  @Test
  void aRunThatSurvived_saysWhatItSurvived_andWhatEndedEachAttempt() throws Exception {
    RunRecord r = record(JobStatus.SUCCEEDED, null);
    Map<String, Object> summary = RunSummary.of(r);
    JsonNode json = new ObjectMapper().readTree(TrainingRun.JSON.writeValueAsString(summary));
    assertEquals("SUCCEEDED", json.get("status").asText());
    assertNull(json.get("cause"));
    assertEquals(40, json.get("stepsDone").get("worker1").asLong());
    assertEquals("worker 1 on h: executor lost", json.get("stageAttempts").get(0).get("endedBy").asText());
    assertTrue(json.get("stageAttempts").get(1).get("endedBy").isNull());
    assertEquals(1, json.get("psRecoveries").get(0).get("ps").asInt());
    assertEquals("worker 0's copy of step 12", json.get("psRecoveries").get(0).get("refilledFrom").asText());
    assertEquals(4.2, json.get("psRecoveries").get(0).get("downtimeSeconds").asDouble());
    assertEquals("1 ps loss and 1 retry of the barrier stage", RunSummary.survived(r));
    summary.put("survived", RunSummary.survived(r));
    String html = Report.html("SparkPS run r1", List.of(), summary, r);
    assertTrue(html.contains("1 ps loss and 1 retry of the barrier stage"), "the headline says what it survived");
    assertTrue(html.contains("What the run met") && html.contains("worker 1 on h: executor lost")
        && html.contains("worker 0&#39;s copy of step 12"), "the attempts and the recovery");
    assertNull(RunSummary.survived(new RunRecord("r2", "n", JobStatus.SUCCEEDED, null, 0, Duration.ZERO,
        List.of(new RunRecord.StageAttempt(0, null)), List.of(), List.of(), List.of(), 0)));
  }

  @Test
  void aBinaryLabelsHeadline_isItsAucAndLogLoss_andAClassifiersOtherwiseItsAccuracy() {
    RunRecord r = record(JobStatus.SUCCEEDED, null);
    Map<String, Object> summary = RunSummary.of(r);
    summary.put("evaluation", new java.util.LinkedHashMap<>(Map.of("examples", 5000.0, "auc", 0.7321, "logLoss", 0.4817,
        "accuracy", 0.7679, "f1", 0.6672)));
    String headline = headline(Report.html("SparkPS run r1", List.of(), summary, r));
    assertTrue(headline.contains("0.7321") && headline.contains("evaluation auc"), headline);
    assertTrue(headline.contains("0.4817") && headline.contains("evaluation logLoss"), headline);
    assertTrue(!headline.contains("evaluation accuracy") && !headline.contains("0.7679"), "accuracy says little here");
    assertEquals("auc", Metrics.headline(Map.of("auc", 0.7, "accuracy", 0.8)));
    assertEquals("auc 0.7321, logLoss 0.4817", Metrics.line(Map.of("auc", 0.73211, "logLoss", 0.48171, "accuracy",
        0.8)));

    summary.put("evaluation", Map.of("examples", 10000.0, "accuracy", 0.8712, "f1", 0.87));
    headline = headline(Report.html("SparkPS run r1", List.of(), summary, r));
    assertTrue(headline.contains("0.8712") && headline.contains("evaluation accuracy"), headline);
    assertEquals("accuracy", Metrics.headline(Map.of("accuracy", 0.8)));
    assertEquals("r2", Metrics.headline(Map.of("rmse", 0.3, "r2", 0.8)));
    assertEquals("accuracy 0.8712", Metrics.line(Map.of("accuracy", 0.87123, "f1", 0.8)));
  }

  private static String headline(String html) {
    int start = html.indexOf("id=\"headline\"");
    return html.substring(start, html.indexOf("<h2>", start));
  }

  @Test
  void aFailedRun_leadsWithItsCause() {
    RunRecord r = record(JobStatus.FAILED, "chief 0 on h: column 'features' holds NaN in row 150");
    Map<String, Object> summary = RunSummary.of(r);
    assertEquals("FAILED", summary.get("status"));
    String html = Report.html("SparkPS run r1", List.of(), summary, r);
    int cause = html.indexOf("card bad");
    assertTrue(cause > 0 && cause < html.indexOf("<h2>Curves"), "the cause is in the headline, before the curves");
    assertTrue(html.contains("holds NaN in row 150") && html.contains("class=\"badge FAILED\""));
  }
}
