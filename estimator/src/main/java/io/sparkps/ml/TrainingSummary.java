package io.sparkps.ml;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.spark.Role;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What happened while a model trained: every worker's progress reports (step, examples, loss),
 * the evaluator's reports (its metrics against the variables' version), how many attempts the
 * barrier stage took, the ps tasks it lost and how they came back, and how long it ran. Saved with
 * the model as {@code data/summary.json}.
 *
 * @param workerHistory the workers' reports, oldest first
 * @param evaluatorHistory the evaluator's reports, oldest first
 * @param stageAttempts attempts of the barrier stage
 * @param elapsed wall time of the run
 * @param psRecoveries the ps tasks lost during the run: shard, step, reason, replacement, refill source
 * @param recoveredFailures why earlier stage attempts failed (and the evaluator's failure), each
 *     naming its task and remote cause; the run recovered from every one
 */
public record TrainingSummary(List<TaskProgress> workerHistory, List<TaskProgress> evaluatorHistory,
    int stageAttempts, Duration elapsed, List<PsRecovery> psRecoveries, List<String> recoveredFailures) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** A summary without recovered failures (as of a run that had none). */
  public TrainingSummary(List<TaskProgress> workerHistory, List<TaskProgress> evaluatorHistory, int stageAttempts,
      Duration elapsed, List<PsRecovery> psRecoveries) {
    this(workerHistory, evaluatorHistory, stageAttempts, elapsed, psRecoveries, List.of());
  }

  static TrainingSummary of(RunResult<?> result) {
    return new TrainingSummary(result.workerHistory(), result.evaluatorHistory(), result.stageAttempts(),
        result.elapsed(), result.psRecoveries(), result.recoveredFailures());
  }

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

  /** The evaluator's last metrics (empty when it never reported). */
  public Map<String, Double> lastEvaluation() {
    return evaluatorHistory.isEmpty() ? Map.of() : evaluatorHistory.get(evaluatorHistory.size() - 1).metrics();
  }

  /** Worker records a saved summary keeps at most (the full record is the run's metrics.jsonl and event log). */
  static final int MAX_SAVED_WORKER_RECORDS = 10_000;

  /**
   * This summary as JSON. Past {@link #MAX_SAVED_WORKER_RECORDS} worker records, every k-th of
   * each worker's records is kept (its last always), so that a long run's model stays small.
   */
  public String toJson() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("stageAttempts", stageAttempts);
    out.put("elapsedMillis", elapsed.toMillis());
    out.put("workers", reports(thinned(workerHistory, MAX_SAVED_WORKER_RECORDS)));
    out.put("evaluator", reports(evaluatorHistory));
    List<Map<String, Object>> recoveries = new ArrayList<>();
    for (PsRecovery r : psRecoveries) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("shard", r.shard());
      m.put("lostAddress", r.lostAddress());
      m.put("reason", r.reason());
      m.put("atStep", r.atStep());
      m.put("replacement", r.replacement());
      m.put("source", r.source());
      m.put("restoredAtStep", r.restoredAtStep());
      m.put("downtimeMillis", r.downtime().toMillis());
      recoveries.add(m);
    }
    out.put("psRecoveries", recoveries);
    out.put("recoveredFailures", recoveredFailures);
    try {
      return JSON.writeValueAsString(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Reads a summary written by {@link #toJson()}. */
  public static TrainingSummary fromJson(String json) {
    try {
      Map<String, Object> in = JSON.readValue(json, new TypeReference<Map<String, Object>>() {});
      return new TrainingSummary(reports(in.get("workers")), reports(in.get("evaluator")),
          ((Number) in.get("stageAttempts")).intValue(), Duration.ofMillis(((Number) in.get("elapsedMillis")).longValue()),
          recoveries(in.get("psRecoveries")), failures(in.get("recoveredFailures")));
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("not a SparkPS training summary: " + e.getMessage(), e);
    }
  }

  /** Every k-th record of each worker (and each one's last) so that at most about {@code max} remain. */
  static List<TaskProgress> thinned(List<TaskProgress> history, int max) {
    if (history.size() <= max) {
      return history;
    }
    int k = (history.size() + max - 1) / max;
    Map<Integer, Integer> seen = new java.util.HashMap<>();
    Map<Integer, Integer> last = new java.util.HashMap<>();
    for (int i = 0; i < history.size(); i++) {
      last.put(history.get(i).index(), i);
    }
    List<TaskProgress> out = new ArrayList<>(max + last.size());
    for (int i = 0; i < history.size(); i++) {
      TaskProgress p = history.get(i);
      int n = seen.merge(p.index(), 1, Integer::sum);
      if ((n - 1) % k == 0 || last.get(p.index()) == i) {
        out.add(p);
      }
    }
    return out;
  }

  private static List<Map<String, Object>> reports(List<TaskProgress> history) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (TaskProgress p : history) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("role", p.role().name());
      m.put("index", p.index());
      m.put("host", p.host());
      m.put("executor", p.executor());
      m.put("attempt", p.attempt());
      m.put("step", p.step());
      m.put("examples", p.examples());
      Map<String, Object> metrics = new LinkedHashMap<>();
      // JSON has no NaN or infinities: they are written as strings and read back.
      p.metrics().forEach((k, v) -> metrics.put(k, Double.isFinite(v) ? v : v.toString()));
      m.put("metrics", metrics);
      m.put("message", p.message());
      if (p.timeMillis() != 0) {
        m.put("timeMillis", p.timeMillis());
      }
      out.add(m);
    }
    return out;
  }

  /** The recovered failures of a summary (none in one written before they were recorded). */
  @SuppressWarnings("unchecked")
  private static List<String> failures(Object json) {
    return json == null ? List.of() : List.copyOf((List<String>) json);
  }

  /** The recoveries of a summary (none in one written before they were recorded). */
  @SuppressWarnings("unchecked")
  private static List<PsRecovery> recoveries(Object json) {
    List<PsRecovery> out = new ArrayList<>();
    for (Map<String, Object> m : json == null ? List.<Map<String, Object>>of() : (List<Map<String, Object>>) json) {
      out.add(new PsRecovery(((Number) m.get("shard")).intValue(), (String) m.get("lostAddress"), (String) m.get("reason"),
          ((Number) m.get("atStep")).longValue(), (String) m.get("replacement"), (String) m.get("source"),
          ((Number) m.get("restoredAtStep")).longValue(), Duration.ofMillis(((Number) m.get("downtimeMillis")).longValue())));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static List<TaskProgress> reports(Object json) {
    List<TaskProgress> out = new ArrayList<>();
    for (Map<String, Object> m : (List<Map<String, Object>>) json) {
      Map<String, Double> metrics = new LinkedHashMap<>();
      ((Map<String, Object>) m.get("metrics")).forEach((k, v) ->
          metrics.put(k, v instanceof Number n ? n.doubleValue() : Double.valueOf(String.valueOf(v))));
      out.add(new TaskProgress(Role.valueOf((String) m.get("role")), ((Number) m.get("index")).intValue(),
          (String) m.get("host"), (String) m.get("executor"), ((Number) m.get("attempt")).intValue(),
          ((Number) m.get("step")).longValue(), ((Number) m.get("examples")).longValue(), metrics,
          (String) m.get("message"), 0, m.get("timeMillis") instanceof Number t ? t.longValue() : 0));
    }
    return out;
  }
}
