package io.sparkps.bench;

import io.sparkps.bench.TimeToAccuracyBenchmark.Point;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** What {@link TimeToAccuracyBenchmark} prints of its runs: per run, and the medians and ratios over rounds. */
final class AccuracyReport {
  private static final double[] TARGETS = TimeToAccuracyBenchmark.TARGETS;

  private AccuracyReport() {}

  /** One run in a line: when it reached each target, and its final accuracy. */
  static String summary(List<Point> points) {
    StringBuilder b = new StringBuilder();
    for (double target : TARGETS) {
      Point p = first(points, target);
      b.append(String.format(Locale.ROOT, "%.0f%%: %s   ", 100 * target, p == null ? "not reached"
          : String.format(Locale.ROOT, "%6.1f s (%d examples)", p.seconds(), p.examples())));
    }
    Point last = points.get(points.size() - 1);
    return b.append(String.format(Locale.ROOT, "final %.4f after %.1f s", last.accuracy(), last.seconds())).toString();
  }

  /** The first point at or above {@code target}, or null. */
  static Point first(List<Point> points, double target) {
    return points.stream().filter(p -> p.accuracy() >= target).findFirst().orElse(null);
  }

  /** The medians over rounds of every trainer, their ratios against the single process, and accuracy against SYNC and {@code socket}. */
  static void print(Map<String, List<List<Point>>> runs, int epochs, long rows, String socket) {
    System.out.printf(Locale.ROOT, "%n%-38s %12s %12s %16s %16s   (medians over rounds; accuracy after %d epochs, %d "
        + "examples; last-epoch mean: of the points in the last epoch)%n", "trainer", "to 85%, s", "to 88%, s",
        "final accuracy", "last-epoch mean", epochs, epochs * rows);
    Map<String, double[]> medians = new LinkedHashMap<>();
    long lastEpoch = (epochs - 1) * rows;
    runs.forEach((name, list) -> {
      double[] m = {median(list, p -> at(p, TARGETS[0])), median(list, p -> at(p, TARGETS[1])),
          median(list, p -> p.get(p.size() - 1).accuracy()),
          median(list, p -> lastEpochMean(p, lastEpoch))};
      medians.put(name, m);
      System.out.printf(Locale.ROOT, "%-38s %12s %12s %16.4f %16.4f%n", name, seconds(m[0]), seconds(m[1]), m[2], m[3]);
    });
    for (String single : List.of("single-process DL4J, all cores", "single-process DL4J, 1 thread")) {
      if (!runs.containsKey(single)) {
        continue;
      }
      System.out.println("time to 85% and to 88% against the " + single.substring(single.indexOf(',') + 2)
          + " single process (median of per-round ratios; target for 88%: <= 0.8):");
      for (String name : runs.keySet()) {
        if (name.startsWith("single")) {
          continue;
        }
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-38s", name));
        for (double target : TARGETS) {
          List<Double> ratios = new ArrayList<>();
          for (int i = 0; i < runs.get(name).size(); i++) {
            ratios.add(at(runs.get(name).get(i), target) / at(runs.get(single).get(i), target));
          }
          double r = medianOf(ratios);
          line.append(String.format(Locale.ROOT, "  %.0f%%: %s", 100 * target, Double.isInfinite(r) || Double.isNaN(r)
              ? "not reached" : String.format(Locale.ROOT, "%.2fx", r)));
        }
        System.out.println(line);
      }
    }
    List<List<Point>> sync = runs.get("SparkPS SYNC");
    if (sync != null) {
      System.out.println("accuracy against SparkPS SYNC after the same examples (points, median of per-round "
          + "differences, lowest-highest round; target: within 1):");
      for (String mode : List.of("SparkPS ASYNC", "SparkPS SSP", "SparkPS ASYNC, staleness-aware rate",
          "SparkPS SSP, staleness-aware rate")) {
        if (runs.containsKey(mode)) {
          System.out.printf(Locale.ROOT, "  %-38s final %s, last-epoch mean %s%n", mode,
              difference(runs.get(mode), sync, p -> p.get(p.size() - 1).accuracy()),
              difference(runs.get(mode), sync, p -> lastEpochMean(p, lastEpoch)));
        }
      }
    }
    double[] dense = medians.get(socket);
    if (dense != null) {
      System.out.println("accuracy against " + socket + " (points; target: within 0.5):");
      medians.forEach((mode, m) -> {
        if (mode.startsWith(socket + ",")) {
          System.out.printf(Locale.ROOT, "  %-38s final %+.2f, last-epoch mean %+.2f%n", mode, 100 * (m[2] - dense[2]),
              100 * (m[3] - dense[3]));
        }
      });
    }
  }

  /** The mean accuracy of the points after {@code lastEpoch} examples (the last point if none is). */
  static double lastEpochMean(List<Point> points, long lastEpoch) {
    return points.stream().filter(q -> q.examples() > lastEpoch).mapToDouble(Point::accuracy).average()
        .orElse(points.get(points.size() - 1).accuracy());
  }

  /** {@code a} less {@code b} in points: the median of the rounds' differences, with the lowest and highest. */
  static String difference(List<List<Point>> a, List<List<Point>> b, java.util.function.ToDoubleFunction<List<Point>> f) {
    List<Double> d = new ArrayList<>();
    for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
      d.add(100 * (f.applyAsDouble(a.get(i)) - f.applyAsDouble(b.get(i))));
    }
    return String.format(Locale.ROOT, "%+.2f (%+.2f to %+.2f)", medianOf(d), java.util.Collections.min(d),
        java.util.Collections.max(d));
  }

  private static double at(List<Point> points, double target) {
    Point p = first(points, target);
    return p == null ? Double.POSITIVE_INFINITY : p.seconds();
  }

  private static String seconds(double s) {
    return Double.isInfinite(s) || Double.isNaN(s) ? "not reached" : String.format(Locale.ROOT, "%.2f", s);
  }

  private static double median(List<List<Point>> runs, java.util.function.ToDoubleFunction<List<Point>> f) {
    return medianOf(runs.stream().map(f::applyAsDouble).toList());
  }

  private static double medianOf(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
