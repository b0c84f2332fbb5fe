package io.sparkps.cli;

import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * {@code report.html}: one self-contained page (plots as embedded PNGs drawn with JFreeChart, no
 * script, nothing fetched) with the loss and the evaluation metric against the step, throughput
 * over time, each worker's progress, the final figures and the provenance.
 */
final class Report {
  private static final int WIDTH = 760;
  private static final int HEIGHT = 360;

  private Report() {}

  static String html(String title, List<RunRecorder.Event> events, Map<String, Object> summary) throws IOException {
    System.setProperty("java.awt.headless", "true");
    StringBuilder html = new StringBuilder();
    html.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>").append(escape(title))
        .append("</title><style>body{font-family:sans-serif;margin:2em;max-width:60em}"
            + "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}"
            + "img{display:block;margin:1em 0}</style></head><body>\n<h1>").append(escape(title)).append("</h1>\n");
    html.append(table(summary));
    html.append(chart("Training loss", "step", "loss", lossByStep(events)));
    String metric = evaluationMetric(events);
    html.append(metric == null ? "<p>No evaluation data was given: no evaluation plot.</p>\n"
        : chart("Evaluation " + metric, "step (variables' version)", metric, evaluation(events, metric)));
    html.append(chart("Throughput", "seconds", "examples/s", throughput(events)));
    html.append(chart("Progress per worker", "seconds", "step", progress(events)));
    html.append("</body></html>\n");
    return html.toString();
  }

  private static String table(Map<String, Object> summary) {
    StringBuilder b = new StringBuilder("<table>\n");
    summary.forEach((k, v) -> {
      if (!(v instanceof Map)) {
        b.append("<tr><th>").append(escape(k)).append("</th><td>").append(escape(String.valueOf(v))).append("</td></tr>\n");
      }
    });
    summary.forEach((k, v) -> {
      if (v instanceof Map<?, ?> m) {
        m.forEach((mk, mv) -> b.append("<tr><th>").append(escape(k + "." + mk)).append("</th><td>")
            .append(escape(String.valueOf(mv))).append("</td></tr>\n"));
      }
    });
    return b.append("</table>\n").toString();
  }

  private static String chart(String title, String x, String y, XYSeriesCollection data) throws IOException {
    JFreeChart chart = ChartFactory.createXYLineChart(title, x, y, data, PlotOrientation.VERTICAL, true, false, false);
    byte[] png = ChartUtils.encodeAsPNG(chart.createBufferedImage(WIDTH, HEIGHT));
    int points = 0;
    for (int s = 0; s < data.getSeriesCount(); s++) {
      points += data.getItemCount(s);
    }
    return "<h2>" + escape(title) + "</h2>\n<img alt=\"" + escape(title) + ": " + points + " points in "
        + data.getSeriesCount() + " series\" width=\"" + WIDTH + "\" height=\"" + HEIGHT
        + "\" src=\"data:image/png;base64," + Base64.getEncoder().encodeToString(png) + "\">\n";
  }

  private static boolean isWorker(TaskProgress p) {
    return p.role() == Role.CHIEF || p.role() == Role.WORKER;
  }

  private static XYSeriesCollection lossByStep(List<RunRecorder.Event> events) {
    Map<Integer, XYSeries> series = new TreeMap<>();
    for (RunRecorder.Event e : events) {
      TaskProgress p = e.progress();
      if (isWorker(p) && p.metrics().containsKey("loss")) {
        series.computeIfAbsent(p.index(), i -> new XYSeries("worker " + i)).add(p.step(), p.metrics().get("loss"));
      }
    }
    return collection(series);
  }

  static String evaluationMetric(List<RunRecorder.Event> events) {
    for (RunRecorder.Event e : events) {
      if (e.progress().role() == Role.EVALUATOR) {
        return e.progress().metrics().containsKey("accuracy") ? "accuracy" : "r2";
      }
    }
    return null;
  }

  private static XYSeriesCollection evaluation(List<RunRecorder.Event> events, String metric) {
    XYSeries s = new XYSeries(metric);
    XYSeries loss = new XYSeries("loss");
    for (RunRecorder.Event e : events) {
      TaskProgress p = e.progress();
      if (p.role() == Role.EVALUATOR && p.metrics().containsKey(metric)) {
        s.addOrUpdate((double) p.step(), (double) p.metrics().get(metric));
        loss.addOrUpdate((double) p.step(), (double) p.metrics().getOrDefault("loss", Double.NaN));
      }
    }
    XYSeriesCollection c = new XYSeriesCollection(s);
    c.addSeries(loss);
    return c;
  }

  private static XYSeriesCollection throughput(List<RunRecorder.Event> events) {
    Map<Integer, Long> examples = new TreeMap<>();
    XYSeries s = new XYSeries("all workers");
    double lastT = 0;
    long lastTotal = 0;
    for (RunRecorder.Event e : events) {
      if (!isWorker(e.progress())) {
        continue;
      }
      examples.put(e.progress().index(), e.progress().examples());
      long total = examples.values().stream().mapToLong(Long::longValue).sum();
      if (e.seconds() - lastT >= 1.0) {
        s.add(e.seconds(), (total - lastTotal) / (e.seconds() - lastT));
        lastT = e.seconds();
        lastTotal = total;
      }
    }
    return new XYSeriesCollection(s);
  }

  private static XYSeriesCollection progress(List<RunRecorder.Event> events) {
    Map<Integer, XYSeries> series = new TreeMap<>();
    for (RunRecorder.Event e : events) {
      TaskProgress p = e.progress();
      if (isWorker(p)) {
        series.computeIfAbsent(p.index(), i -> new XYSeries("worker " + i)).add(e.seconds(), p.step());
      }
    }
    return collection(series);
  }

  private static XYSeriesCollection collection(Map<Integer, XYSeries> series) {
    XYSeriesCollection c = new XYSeriesCollection();
    series.values().forEach(c::addSeries);
    return c;
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
