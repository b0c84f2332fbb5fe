package io.sparkps.spark.ui;

import io.sparkps.spark.ui.SparkPsEvents.RunUpdate;
import io.sparkps.spark.ui.SparkPsEvents.StepRow;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The SparkPS tab's page: the application's runs, and for the chosen one (the latest by default)
 * its state, curves, roles, ps shards, stage attempts and ps recoveries. While a run is going the
 * page reloads its content every two seconds. Rendered from a {@link RunStore} alone, so the live
 * tab and the History Server's show the same.
 */
public final class SparkPsPage {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss", Locale.ROOT)
      .withZone(ZoneId.systemDefault());
  private static final List<String> TIMES = List.of("computeMs", "pullMs", "pushMs", "waitMs", "tableMs");

  private SparkPsPage() {}

  /** One tab of Spark's header: its name and URL prefix. */
  public record Tab(String name, String prefix) {}

  /**
   * The whole page, with Spark's header (its styles from {@code root + "/static/"}, where Spark
   * serves them: the UI's root, or a proxy's base) and the tabs {@code tabs}.
   */
  public static String page(RunStore store, String runId, List<Tab> tabs, String appName, String sparkVersion,
      String root) {
    String r = Html.escape(root);
    StringBuilder b = new StringBuilder(16_384);
    b.append("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, "
        + "initial-scale=1\"><link rel=\"stylesheet\" href=\"" + r + "/static/bootstrap.min.css\" type=\"text/css\"/>"
        + "<link rel=\"stylesheet\" href=\"" + r + "/static/webui.css\" type=\"text/css\"/><title>")
        .append(Html.escape(appName)).append(" - SparkPS</title><style>")
        .append(".sparkps h4{margin-top:1.4em}.sparkps table{font-size:13px}.sparkps .charts svg{margin:0 12px 12px 0;"
            + "border:1px solid #eee}.sparkps .badge-run{padding:2px 8px;border-radius:10px;color:#fff;font-size:12px}"
            + ".st-SUCCEEDED{background:#2e7d32}.st-FAILED{background:#c62828}.st-CANCELLED{background:#757575}"
            + ".st-RUNNING,.st-LAUNCHING{background:#1565c0}.sparkps .cause{color:#b71c1c}</style></head><body>");
    b.append("<nav class=\"navbar navbar-expand-md navbar-light bg-light mb-4\"><div class=\"navbar-header\">"
        + "<div class=\"navbar-brand\"><a href=\"../\"><img src=\"" + r + "/static/spark-logo-77x50px-hd.png\" alt=\"Spark\"/>"
        + "<span class=\"version\">").append(Html.escape(sparkVersion)).append("</span></a></div></div>"
        + "<div class=\"navbar-collapse collapse\"><ul class=\"navbar-nav mr-auto\">");
    for (Tab t : tabs) {
      b.append("<li class=\"nav-item").append(t.prefix().equals(SparkPsTab.PREFIX) ? " active" : "")
          .append("\"><a class=\"nav-link\" href=\"../").append(Html.escape(t.prefix())).append("/\">")
          .append(Html.escape(t.name())).append("</a></li>");
    }
    b.append("</ul><span class=\"navbar-text navbar-right d-none d-md-block\"><strong class=\"text-nowrap\">")
        .append(Html.escape(appName)).append("</strong> application UI</span></div></nav>");
    b.append("<div class=\"container-fluid sparkps\"><h3>SparkPS</h3><div id=\"sparkps-content\">")
        .append(content(store, runId)).append("</div></div>");
    b.append("<script>(function(){if(!location.pathname.endsWith('/')){location.replace(location.pathname+'/'"
        + "+location.search);return;}function tick(){var c=document.getElementById('sparkps-content');"
        + "if(!c||c.firstElementChild.getAttribute('data-live')!=='true')return;var q=new URLSearchParams(location.search);"
        + "q.set('fragment','1');fetch(location.pathname+'?'+q.toString(),{cache:'no-store'}).then(function(r){return r.text();})"
        + ".then(function(t){c.innerHTML=t;setTimeout(tick,2000);}).catch(function(){setTimeout(tick,5000);});}"
        + "setTimeout(tick,2000);})();</script></body></html>");
    return b.toString();
  }

  /** The page's content alone (what a live page reloads). */
  public static String content(RunStore store, String runId) {
    List<RunUpdate> runs = store.runs();
    StringBuilder b = new StringBuilder(8_192);
    boolean live = runs.stream().anyMatch(r -> !isDone(r.status));
    b.append("<div data-live=\"").append(live).append("\">");
    if (runs.isEmpty()) {
      return b.append("<p>No SparkPS run in this application yet.</p></div>").toString();
    }
    RunUpdate chosen = runId == null ? runs.get(0) : store.run(runId);
    b.append("<h4>Runs</h4>").append(runsTable(runs, chosen == null ? null : chosen.runId));
    if (chosen == null) {
      return b.append("<p>No run ").append(Html.escape(runId)).append(" in this application.</p></div>").toString();
    }
    List<StepRow> steps = store.steps(chosen.runId);
    b.append(RunSections.of(chosen, steps));
    return b.append("</div>").toString();
  }

  static boolean isDone(String status) {
    return "SUCCEEDED".equals(status) || "FAILED".equals(status) || "CANCELLED".equals(status);
  }

  private static String runsTable(List<RunUpdate> runs, String chosen) {
    StringBuilder b = new StringBuilder("<table class=\"table table-bordered table-sm table-striped\" id=\"sparkps-runs\">"
        + "<thead><tr><th>Run</th><th>Name</th><th>Status</th><th>Started</th><th>Duration</th><th>Workers</th>"
        + "<th>PS</th><th>Stage attempts</th><th>PS recoveries</th></tr></thead><tbody>");
    for (RunUpdate r : runs) {
      b.append("<tr").append(r.runId.equals(chosen) ? " class=\"table-active\"" : "").append("><td><a href=\"?run=")
          .append(Html.escape(r.runId)).append("\">").append(Html.escape(r.runId)).append("</a></td><td>")
          .append(Html.escape(r.name)).append("</td><td>").append(badge(r.status)).append("</td><td>")
          .append(TIME.format(Instant.ofEpochMilli(r.startedMillis))).append("</td><td>").append(duration(r.elapsedMillis))
          .append("</td><td>").append(r.numWorkers).append("</td><td>").append(r.numPs).append("</td><td>")
          .append(r.attempts.size()).append("</td><td>").append(r.recoveries.size()).append("</td></tr>");
    }
    return b.append("</tbody></table>").toString();
  }

  static String badge(String status) {
    return "<span class=\"badge-run st-" + Html.escape(status) + "\">" + Html.escape(status) + "</span>";
  }

  static String duration(long millis) {
    long s = millis / 1000;
    return s >= 3600 ? String.format(Locale.ROOT, "%d h %02d min", s / 3600, s / 60 % 60)
        : s >= 60 ? String.format(Locale.ROOT, "%d min %02d s", s / 60, s % 60)
        : String.format(Locale.ROOT, "%.1f s", millis / 1000.0);
  }

  /**
   * The evaluator's metric names as a chart lists them: a binary label's AUC and loss (log loss) first,
   * as click-through models are measured, then the others by name.
   */
  static List<String> evaluationOrder(List<StepRow> evaluator) {
    TreeSet<String> names = new TreeSet<>();
    evaluator.forEach(s -> names.addAll(s.metrics == null ? List.of() : s.metrics.keySet()));
    List<String> out = new ArrayList<>();
    if (names.contains("auc")) {
      for (String first : List.of("auc", "loss")) {
        if (names.remove(first)) {
          out.add(first);
        }
      }
    }
    out.addAll(names);
    return out;
  }

  /** The charts of a run's records: loss per worker, the evaluator's metrics, and where a step's time goes. */
  static String charts(List<StepRow> steps) {
    Map<Integer, List<StepRow>> byWorker = new TreeMap<>();
    List<StepRow> evaluator = new ArrayList<>();
    for (StepRow s : steps) {
      if ("EVALUATOR".equals(s.role)) {
        evaluator.add(s);
      } else if (("CHIEF".equals(s.role) || "WORKER".equals(s.role)) && s.metrics != null && s.metrics.get("loss") != null) {
        byWorker.computeIfAbsent(s.index, i -> new ArrayList<>()).add(s);
      }
    }
    StringBuilder b = new StringBuilder("<div class=\"charts\">");
    SvgChart loss = new SvgChart("Training loss", "step", "loss");
    byWorker.forEach((w, rows) -> loss.series("worker " + w, column(rows, null), column(rows, "loss")));
    b.append(loss.render(560, 300));
    List<String> names = evaluationOrder(evaluator);
    if (!names.isEmpty()) {
      SvgChart eval = new SvgChart("Evaluation", "step (variables' version)", "value");
      for (String n : names) {
        eval.plain(n, column(evaluator, null), column(evaluator, n));
      }
      b.append(eval.render(560, 300));
    }
    if (!byWorker.isEmpty()) {
      List<StepRow> first = byWorker.values().iterator().next();
      SvgChart times = new SvgChart("Step time, worker " + byWorker.keySet().iterator().next(), "step", "ms").ignoreOutliers();
      for (String t : TIMES) {
        if (first.get(first.size() - 1).metrics.containsKey(t)) {
          times.series(t.substring(0, t.length() - 2), column(first, null), column(first, t));
        }
      }
      if (!times.isEmpty()) {
        b.append(times.render(560, 300));
      }
    }
    return b.append("</div>").toString();
  }

  /** A column of rows: the step (null) or a metric (NaN where missing). */
  private static double[] column(List<StepRow> rows, String metric) {
    double[] out = new double[rows.size()];
    for (int i = 0; i < out.length; i++) {
      StepRow r = rows.get(i);
      Double v = metric == null ? Double.valueOf(r.step) : r.metrics == null ? null : r.metrics.get(metric);
      out[i] = v == null ? Double.NaN : v;
    }
    return out;
  }
}
