package io.sparkps.cli;

import io.sparkps.spark.Role;
import io.sparkps.spark.RunRecord;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.ui.Html;
import io.sparkps.spark.ui.SvgChart;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * {@code report.html}: one self-contained page (inline SVG charts, no script, nothing fetched)
 * that opens with the headline (status, evaluation, time, examples/s, steps, what the run survived
 * or why it failed), then the curves (each worker's loss raw and smoothed, the evaluator's metrics,
 * throughput, where a step's time goes), the network as a table of layers, the settings, the stage
 * attempts and ps recoveries, and the raw record folded away at the end.
 */
final class Report {
  private static final int W = 580;
  private static final int H = 300;
  private static final List<String> TIMES = List.of("computeMs", "pullMs", "pushMs", "waitMs", "tableMs");
  private static final String STYLE = "body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}"
      + "main{max-width:1300px;margin:0 auto;padding:1.5em 2em}h1{font-size:1.6em;margin:.2em 0}"
      + "h2{font-size:1.15em;margin:1.6em 0 .6em;border-bottom:1px solid #ddd;padding-bottom:.3em}"
      + ".sub{color:#666;margin:0 0 1em}.badge{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;"
      + "font-size:.6em;vertical-align:middle}.SUCCEEDED{background:#2e7d32}.FAILED{background:#c62828}"
      + ".CANCELLED{background:#757575}.cards{display:flex;flex-wrap:wrap;gap:12px}.card{background:#fff;"
      + "border:1px solid #e3e3e3;border-radius:6px;padding:10px 16px;min-width:150px}.card .v{font-size:1.5em;"
      + "font-weight:600}.card .k{color:#666;font-size:.85em}.card.bad{border-color:#e57373}.card.bad .v{color:#c62828;"
      + "font-size:1em;font-weight:500;max-width:60em}.charts svg{margin:0 14px 14px 0;border:1px solid #e3e3e3;"
      + "border-radius:4px}table{border-collapse:collapse;background:#fff;font-size:.9em}td,th{border:1px solid #e3e3e3;"
      + "padding:4px 10px;text-align:left;vertical-align:top}th{background:#f3f3f3}.num{text-align:right}"
      + "details{margin-top:2em}summary{cursor:pointer;color:#555}pre{white-space:pre-wrap;word-break:break-all;"
      + "background:#fff;border:1px solid #e3e3e3;padding:8px;font-size:.8em}";

  private Report() {}

  static String html(String title, List<RunRecorder.Event> events, Map<String, Object> summary, RunRecord record) {
    String status = String.valueOf(summary.getOrDefault("status", record.status().name()));
    StringBuilder b = new StringBuilder(32_768);
    b.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>").append(Html.escape(title))
        .append("</title><style>").append(STYLE).append("</style></head><body><main>\n");
    b.append("<h1>").append(Html.escape(title)).append(" <span class=\"badge ").append(Html.escape(status)).append("\">")
        .append(Html.escape(status)).append("</span></h1><p class=\"sub\">").append(Html.escape(record.name()))
        .append(" &middot; started ").append(Html.escape(String.valueOf(summary.get("startedAt")))).append(" &middot; ")
        .append(String.format(Locale.ROOT, "%.1f s", record.elapsed().toMillis() / 1000.0)).append("</p>\n");
    b.append(headline(summary, record)).append("\n<h2>Curves</h2><div class=\"charts\">").append(charts(events))
        .append("</div>\n");
    @SuppressWarnings("unchecked")
    Map<String, String> provenance = summary.get("provenance") instanceof Map<?, ?> p ? (Map<String, String>) p : Map.of();
    b.append("<h2>Network</h2>").append(NetworkTable.html(provenance.get("param.networkJson"))).append('\n');
    if (summary.get("embeddingTables") instanceof List<?> tables && !tables.isEmpty()) {
      b.append("<h2>Embedding tables</h2>").append(embeddingTables(tables)).append('\n');
    }
    b.append("<h2>Settings</h2>").append(settings(provenance)).append('\n');
    b.append(attempts(record));
    b.append("<details><summary>The raw record: summary.json's values, the input schema, the network's JSON</summary>")
        .append(rawTable(summary));
    provenance.forEach((k, v) -> {
      if (v != null && v.startsWith("{")) {
        b.append("<h3>").append(Html.escape(k)).append("</h3><pre>").append(Html.escape(v)).append("</pre>");
      }
    });
    return b.append("</details></main></body></html>\n").toString();
  }

  private static String headline(Map<String, Object> summary, RunRecord record) {
    StringBuilder b = new StringBuilder("<div class=\"cards\" id=\"headline\">");
    if (summary.get("evaluation") instanceof Map<?, ?> eval && !eval.isEmpty()) {
      @SuppressWarnings("unchecked")
      Map<String, ?> metrics = (Map<String, ?>) eval;
      for (String key : Metrics.leading(metrics)) {
        if (eval.get(key) instanceof Number n) {
          b.append(card(String.format(Locale.ROOT, "%.4f", n.doubleValue()), "evaluation " + key, false));
        }
      }
    }
    if (summary.get("trainSeconds") instanceof Number t) {
      b.append(card(String.format(Locale.ROOT, "%.1f s", t.doubleValue()), "training time", false));
    }
    if (summary.get("examplesPerSecond") instanceof Number r) {
      b.append(card(String.format(Locale.ROOT, "%,d", r.longValue()), "examples per second", false));
    }
    long steps = record.stepsDone().values().stream().mapToLong(Long::longValue).max().orElse(0);
    b.append(card(String.format(Locale.ROOT, "%,d", steps), "steps a worker", false));
    if (record.cause() != null) {
      b.append(card(Html.escape(record.cause()), "why it ended", true));
    }
    Object survived = summary.get("survived");
    b.append(card(survived == null ? "nothing to survive" : Html.escape(String.valueOf(survived)), "survived", false));
    return b.append("</div>").toString();
  }

  private static String card(String value, String key, boolean bad) {
    return "<div class=\"card" + (bad ? " bad" : "") + "\"><div class=\"v\">" + value + "</div><div class=\"k\">"
        + Html.escape(key) + "</div></div>";
  }

  private static boolean isWorker(TaskProgress p) {
    return p.role() == Role.CHIEF || p.role() == Role.WORKER;
  }

  static String charts(List<RunRecorder.Event> events) {
    Map<Integer, List<TaskProgress>> byWorker = new TreeMap<>();
    List<TaskProgress> evaluator = new ArrayList<>();
    for (RunRecorder.Event e : events) {
      TaskProgress p = e.progress();
      if (isWorker(p) && p.metrics().containsKey("loss")) {
        byWorker.computeIfAbsent(p.index(), i -> new ArrayList<>()).add(p);
      } else if (p.role() == Role.EVALUATOR) {
        evaluator.add(p);
      }
    }
    StringBuilder b = new StringBuilder();
    SvgChart loss = new SvgChart("Training loss", "step", "loss");
    byWorker.forEach((w, ps) -> loss.series("worker " + w, steps(ps), values(ps, "loss")));
    b.append(loss.render(W, H));
    TreeSet<String> names = new TreeSet<>();
    evaluator.forEach(p -> names.addAll(p.metrics().keySet()));
    if (names.isEmpty()) {
      b.append("<p>No evaluation data was given: no evaluation curve.</p>");
    } else {
      SvgChart eval = new SvgChart("Evaluation", "step (variables' version)", "value");
      names.forEach(n -> eval.plain(n, steps(evaluator), values(evaluator, n)));
      b.append(eval.render(W, H));
    }
    b.append(throughput(events).render(W, H));
    if (!byWorker.isEmpty()) {
      int w = byWorker.keySet().iterator().next();
      List<TaskProgress> ps = byWorker.get(w);
      SvgChart times = new SvgChart("Where worker " + w + "'s step time goes", "step", "ms").ignoreOutliers();
      for (String t : TIMES) {
        if (ps.get(ps.size() - 1).metrics().containsKey(t)) {
          times.series(t.substring(0, t.length() - 2), steps(ps), values(ps, t));
        }
      }
      if (!times.isEmpty()) {
        b.append(times.render(W, H));
      }
    }
    return b.toString();
  }

  private static double[] steps(List<TaskProgress> ps) {
    return ps.stream().mapToDouble(TaskProgress::step).toArray();
  }

  private static double[] values(List<TaskProgress> ps, String metric) {
    return ps.stream().mapToDouble(p -> p.metrics().getOrDefault(metric, Double.NaN)).toArray();
  }

  /** Examples per second of all workers together, over each second of the run. */
  private static SvgChart throughput(List<RunRecorder.Event> events) {
    Map<Integer, Long> examples = new TreeMap<>();
    List<Double> xs = new ArrayList<>();
    List<Double> ys = new ArrayList<>();
    double lastT = 0;
    long lastTotal = 0;
    for (RunRecorder.Event e : events) {
      if (!isWorker(e.progress()) || e.progress().metrics().isEmpty()) {
        continue;
      }
      examples.put(e.progress().index(), e.progress().examples());
      long total = examples.values().stream().mapToLong(Long::longValue).sum();
      if (e.seconds() - lastT >= 1.0) {
        xs.add(e.seconds());
        ys.add((total - lastTotal) / (e.seconds() - lastT));
        lastT = e.seconds();
        lastTotal = total;
      }
    }
    return new SvgChart("Throughput", "seconds", "examples/s").series("all workers",
        xs.stream().mapToDouble(Double::doubleValue).toArray(), ys.stream().mapToDouble(Double::doubleValue).toArray());
  }

  /** The embedding columns, a row each: settings, the ps table each trains and its rows (as {@link EmbeddingTablesSummary}). */
  private static String embeddingTables(List<?> tables) {
    StringBuilder b = new StringBuilder("<table id=\"embeddings\"><thead><tr><th>Column</th><th>Dim</th><th>Optimizer"
        + "</th><th>Learning rate</th><th>Min count</th><th>Buckets</th><th>Table</th><th>Rows</th></tr></thead><tbody>");
    for (Object o : tables) {
      if (o instanceof Map<?, ?> m) {
        b.append("<tr><td>").append(Html.escape(String.valueOf(m.get("column")))).append("</td><td class=\"num\">")
            .append(m.get("dim")).append("</td><td>").append(Html.escape(String.valueOf(m.get("optimizer"))))
            .append("</td><td class=\"num\">").append(m.get("learningRate")).append("</td><td class=\"num\">")
            .append(m.get("minCount")).append("</td><td class=\"num\">")
            .append(m.get("buckets") instanceof Number n && n.longValue() == 0 ? "a row per id"
                : String.valueOf(m.get("buckets"))).append("</td><td>").append(Html.escape(String.valueOf(m.get("table"))))
            .append("</td><td class=\"num\">").append(m.get("rows") instanceof Number r
                ? String.format(Locale.ROOT, "%,d", r.longValue()) : "not counted").append("</td></tr>");
      }
    }
    return b.append("</tbody></table>").toString();
  }

  private static String settings(Map<String, String> provenance) {
    StringBuilder b = new StringBuilder("<table class=\"settings\"><tbody>");
    new TreeMap<>(provenance).forEach((k, v) -> {
      // (the embedding columns' JSON has its own table)
      if (v != null && !v.startsWith("{") && !k.equals("param.networkJson") && !k.equals("param.embeddingColumns")) {
        b.append("<tr><th>").append(Html.escape(k.startsWith("param.") ? k.substring(6) : k)).append("</th><td>")
            .append(Html.escape(v)).append("</td></tr>");
      }
    });
    return b.append("</tbody></table>").toString();
  }

  private static String attempts(RunRecord r) {
    if (r.stageAttempts().size() <= 1 && r.psRecoveries().isEmpty()) {
      return "";
    }
    StringBuilder b = new StringBuilder("<h2>What the run met</h2><table id=\"attempts\"><thead><tr><th>Stage attempt</th>"
        + "<th>Ended by</th></tr></thead><tbody>");
    r.stageAttempts().forEach(a -> b.append("<tr><td>").append(a.attempt()).append("</td><td>")
        .append(a.endedBy() == null ? "completed" : Html.escape(a.endedBy())).append("</td></tr>"));
    b.append("</tbody></table>");
    if (!r.psRecoveries().isEmpty()) {
      b.append("<p></p><table id=\"recoveries\"><thead><tr><th>PS</th><th>Lost at step</th><th>Reason</th>"
          + "<th>Replacement</th><th>Refilled from</th><th>Down for</th></tr></thead><tbody>");
      r.psRecoveries().forEach(p -> b.append("<tr><td>").append(p.shard()).append("</td><td>").append(p.atStep())
          .append("</td><td>").append(Html.escape(p.reason())).append("</td><td>").append(Html.escape(p.replacement()))
          .append("</td><td>").append(Html.escape(p.source())).append("</td><td>")
          .append(String.format(Locale.ROOT, "%.1f s", p.downtime().toMillis() / 1000.0)).append("</td></tr>"));
      b.append("</tbody></table>");
    }
    return b.toString();
  }

  private static String rawTable(Map<String, Object> summary) {
    StringBuilder b = new StringBuilder("<table>");
    summary.forEach((k, v) -> {
      if (!k.equals("provenance")) {
        b.append("<tr><th>").append(Html.escape(k)).append("</th><td>").append(Html.escape(String.valueOf(v)))
            .append("</td></tr>");
      }
    });
    return b.append("</table>").toString();
  }
}
