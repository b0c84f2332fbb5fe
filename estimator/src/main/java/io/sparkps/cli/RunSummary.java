package io.sparkps.cli;

import io.sparkps.spark.RunRecord;
import io.sparkps.spark.recovery.PsRecovery;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The part of {@code summary.json} every run has, whatever its end: status and cause, the steps
 * each worker did, the barrier stage's attempts with what ended each, and the ps tasks lost and
 * how each came back.
 */
final class RunSummary {
  private RunSummary() {}

  static Map<String, Object> of(RunRecord r) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("status", r.status().name());
    out.put("runId", r.runId());
    if (r.cause() != null) {
      out.put("cause", r.cause());
    }
    out.put("startedAt", java.time.Instant.ofEpochMilli(r.startedMillis()).toString());
    out.put("runSeconds", r.elapsed().toMillis() / 1000.0);
    Map<String, Object> steps = new LinkedHashMap<>();
    r.stepsDone().forEach((w, s) -> steps.put("worker" + w, s));
    out.put("stepsDone", steps);
    List<Map<String, Object>> attempts = new ArrayList<>();
    for (RunRecord.StageAttempt a : r.stageAttempts()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("attempt", a.attempt());
      m.put("endedBy", a.endedBy());
      attempts.add(m);
    }
    out.put("stageAttempts", attempts);
    out.put("psRecoveries", recoveries(r.psRecoveries()));
    if (r.recordsNotKept() > 0) {
      out.put("stepsNotRecorded", r.recordsNotKept());
    }
    return out;
  }

  static List<Map<String, Object>> recoveries(List<PsRecovery> recoveries) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (PsRecovery p : recoveries) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("ps", p.shard());
      m.put("lostAt", p.lostAddress());
      m.put("reason", p.reason());
      m.put("atStep", p.atStep());
      m.put("replacement", p.replacement());
      m.put("refilledFrom", p.source());
      m.put("restoredAtStep", p.restoredAtStep());
      m.put("downtimeSeconds", p.downtime().toMillis() / 1000.0);
      out.add(m);
    }
    return out;
  }

  /** The line that says what a run survived, or null when it survived nothing. */
  static String survived(RunRecord r) {
    int retries = r.stageAttempts().size() - 1;
    int lost = r.psRecoveries().size();
    if (retries <= 0 && lost == 0) {
      return null;
    }
    List<String> parts = new ArrayList<>();
    if (lost > 0) {
      parts.add(lost + (lost == 1 ? " ps loss" : " ps losses"));
    }
    if (retries > 0) {
      parts.add(retries + (retries == 1 ? " retry" : " retries") + " of the barrier stage");
    }
    return String.join(" and ", parts);
  }
}
