package io.sparkps.spark.ui;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A line chart as inline SVG, for the run's report, the Spark UI's SparkPS tab and notebooks:
 * each series drawn raw (thin, faint) and smoothed (an exponential moving average, debiased at its
 * start, as TensorBoard draws it), on light grid lines with round tick values. Self-contained:
 * no script, no fonts or styles fetched. A series of many points is drawn from at most
 * {@link #MAX_DRAWN} of them (its smoothed curve is computed from all).
 */
public final class SvgChart {
  /** Points drawn per curve at most. */
  public static final int MAX_DRAWN = 1500;
  private static final String[] COLORS = {"#1f77b4", "#e6550d", "#2ca02c", "#9467bd", "#d62728", "#8c564b",
      "#17becf", "#7f7f7f"};

  private record Series(String name, double[] x, double[] y, boolean smooth) {}

  private final String title;
  private final String xLabel;
  private final String yLabel;
  private final List<Series> series = new ArrayList<>();
  private boolean ignoreOutliers;
  /** Numbers the charts' clip paths, whose ids must be unique in a page. */
  private static final java.util.concurrent.atomic.AtomicLong CLIPS = new java.util.concurrent.atomic.AtomicLong();

  public SvgChart(String title, String xLabel, String yLabel) {
    this.title = title;
    this.xLabel = xLabel;
    this.yLabel = yLabel;
  }

  /** Adds a series drawn raw and smoothed (smoothed only when it has 10 points or more). */
  public SvgChart series(String name, double[] x, double[] y) {
    return add(name, x, y, x.length >= 10);
  }

  /** Adds a series drawn as it is (points that are already few or smooth, e.g. evaluations). */
  public SvgChart plain(String name, double[] x, double[] y) {
    return add(name, x, y, false);
  }

  private SvgChart add(String name, double[] x, double[] y, boolean smooth) {
    if (x.length != y.length) {
      throw new IllegalArgumentException("series '" + name + "' has " + x.length + " x values and " + y.length + " y values");
    }
    series.add(new Series(name, x.clone(), y.clone(), smooth));
    return this;
  }

  /**
   * Scales the y axis to the values between the 1st and the 99th percentile (curves are clipped
   * beyond): a few spikes (a garbage collection, a checkpoint) then do not flatten the rest.
   */
  public SvgChart ignoreOutliers() {
    this.ignoreOutliers = true;
    return this;
  }

  /** Whether no series has a finite point. */
  public boolean isEmpty() {
    return series.stream().allMatch(s -> finitePoints(s) == 0);
  }

  /**
   * The exponential moving average of {@code y} with weight {@code w} (0: none), debiased so that
   * its first values are not pulled toward 0. Non-finite values are skipped (the previous stands).
   */
  public static double[] smoothed(double[] y, double w) {
    double[] out = new double[y.length];
    double acc = 0;
    double norm = 0;
    for (int i = 0; i < y.length; i++) {
      if (Double.isFinite(y[i])) {
        acc = acc * w + (1 - w) * y[i];
        norm = norm * w + (1 - w);
      }
      out[i] = norm == 0 ? Double.NaN : acc / norm;
    }
    return out;
  }

  /** The smoothing weight for {@code n} points: heavier for longer curves (0.6 to 0.97). */
  static double weight(int n) {
    return Math.min(0.97, Math.max(0.6, 1 - 8.0 / Math.max(1, n)));
  }

  /** The chart as an {@code <svg>} element of {@code width} by {@code height} pixels. */
  public String render(int width, int height) {
    double[] xr = range(true);
    double[] yr = ignoreOutliers ? percentileRange() : range(false);
    int left = 62;
    int right = 14;
    int top = 30;
    int bottom = 44;
    double pw = width - left - right;
    double ph = height - top - bottom;
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sparkps-chart\" width=\"%d\" "
        + "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica,Arial,sans-serif\" font-size=\"11\" "
        + "role=\"img\" aria-label=\"%s\">", width, height, width, height, Html.escape(title)));
    b.append("<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>");
    b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"600\" fill=\"#222\">%s"
        + "</text>", left, Html.escape(title)));
    if (isEmpty()) {
      b.append(String.format(Locale.ROOT, "<text x=\"%.0f\" y=\"%.0f\" fill=\"#888\" text-anchor=\"middle\">no data yet"
          + "</text></svg>", left + pw / 2, top + ph / 2));
      return b.toString();
    }
    for (double t : ticks(yr[0], yr[1])) {
      double py = top + ph - (t - yr[0]) / (yr[1] - yr[0]) * ph;
      b.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
          + "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%s</text>", left, left + pw, py, py, left - 6,
          py + 4, label(t)));
    }
    for (double t : ticks(xr[0], xr[1])) {
      double px = left + (t - xr[0]) / (xr[1] - xr[0]) * pw;
      b.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#f0f0f0\"/>"
          + "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">%s</text>", px, px, top, top + ph, px,
          top + ph + 15, label(t)));
    }
    b.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
        + "stroke=\"#bbb\"/>", left, top, pw, ph));
    b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#333\">%s</text>",
        left + pw / 2, height - 8, Html.escape(xLabel)));
    b.append(String.format(Locale.ROOT, "<text transform=\"translate(13 %.1f) rotate(-90)\" text-anchor=\"middle\" "
        + "fill=\"#333\">%s</text>", top + ph / 2, Html.escape(yLabel)));
    String clip = "sparkps-clip-" + CLIPS.incrementAndGet();
    b.append(String.format(Locale.ROOT, "<clipPath id=\"%s\"><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\"/>"
        + "</clipPath><g clip-path=\"url(#%s)\">", clip, left, top, pw, ph, clip));
    StringBuilder legend = new StringBuilder();
    double legendX = left + pw;
    for (int i = series.size() - 1; i >= 0; i--) {
      Series s = series.get(i);
      String color = COLORS[i % COLORS.length];
      if (s.smooth()) {
        b.append(path(s.x(), s.y(), xr, yr, left, top, pw, ph, color, "1", "0.28", "raw"));
        b.append(path(s.x(), smoothed(s.y(), weight(s.y().length)), xr, yr, left, top, pw, ph, color, "2", "1",
            "smoothed"));
      } else {
        b.append(path(s.x(), s.y(), xr, yr, left, top, pw, ph, color, "2", "1", "plain"));
      }
      legendX -= 7 * s.name().length() + 26;
      legend.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"10\" width=\"12\" height=\"3\" fill=\"%s\"/><text "
          + "x=\"%.1f\" y=\"15\" fill=\"#333\" class=\"legend\">%s</text>", legendX, color, legendX + 16,
          Html.escape(s.name())));
    }
    return b.append("</g>").append(legend).append("</svg>").toString();
  }

  /** The y range of the 1st to the 99th percentile of every finite value, padded 4%. */
  private double[] percentileRange() {
    List<Double> all = new ArrayList<>();
    for (Series s : series) {
      for (int i = 0; i < s.y().length; i++) {
        if (Double.isFinite(s.x()[i]) && Double.isFinite(s.y()[i])) {
          all.add(s.y()[i]);
        }
      }
    }
    if (all.size() < 20) {
      return range(false);
    }
    all.sort(null);
    double lo = all.get((int) (all.size() * 0.01));
    double hi = all.get(Math.min(all.size() - 1, (int) (all.size() * 0.99)));
    if (hi - lo < 1e-12) {
      return range(false);
    }
    double pad = (hi - lo) * 0.04;
    return new double[] {lo - pad, hi + pad};
  }

  private static String path(double[] x, double[] y, double[] xr, double[] yr, int left, int top, double pw, double ph,
      String color, String strokeWidth, String opacity, String kind) {
    StringBuilder d = new StringBuilder();
    int stride = Math.max(1, (x.length + MAX_DRAWN - 1) / MAX_DRAWN);
    boolean pen = false;
    int drawn = 0;
    for (int i = 0; i < x.length; i++) {
      if (i % stride != 0 && i != x.length - 1) {
        continue;
      }
      if (!Double.isFinite(x[i]) || !Double.isFinite(y[i])) {
        pen = false;
        continue;
      }
      double px = left + (x[i] - xr[0]) / (xr[1] - xr[0]) * pw;
      double py = top + ph - (y[i] - yr[0]) / (yr[1] - yr[0]) * ph;
      d.append(pen ? 'L' : 'M').append(String.format(Locale.ROOT, "%.1f %.1f ", px, py));
      pen = true;
      drawn++;
    }
    if (drawn == 1) {
      // a single point: a dot, so that it shows
      return String.format(Locale.ROOT, "<circle class=\"%s\" cx=\"%s\" r=\"3\" fill=\"%s\" data-points=\"1\"/>", kind,
          d.substring(1, d.indexOf(" ")) + "\" cy=\"" + d.substring(d.indexOf(" ") + 1).trim(), color);
    }
    return String.format(Locale.ROOT, "<path class=\"%s\" data-points=\"%d\" d=\"%s\" fill=\"none\" stroke=\"%s\" "
        + "stroke-width=\"%s\" stroke-opacity=\"%s\" stroke-linejoin=\"round\"/>", kind, drawn, d.toString().trim(),
        color, strokeWidth, opacity);
  }

  private static int finitePoints(Series s) {
    int n = 0;
    for (int i = 0; i < s.x().length; i++) {
      if (Double.isFinite(s.x()[i]) && Double.isFinite(s.y()[i])) {
        n++;
      }
    }
    return n;
  }

  /** The range of x (or y) over every finite point, widened when flat and padded 4% for y. */
  private double[] range(boolean ofX) {
    double lo = Double.POSITIVE_INFINITY;
    double hi = Double.NEGATIVE_INFINITY;
    for (Series s : series) {
      for (int i = 0; i < s.x().length; i++) {
        if (Double.isFinite(s.x()[i]) && Double.isFinite(s.y()[i])) {
          double v = ofX ? s.x()[i] : s.y()[i];
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
    if (!Double.isFinite(lo)) {
      return new double[] {0, 1};
    }
    if (hi - lo < 1e-12) {
      double pad = Math.max(Math.abs(lo) * 0.05, 0.5);
      return new double[] {lo - pad, hi + pad};
    }
    if (ofX) {
      return new double[] {lo, hi};
    }
    double pad = (hi - lo) * 0.04;
    return new double[] {lo - pad, hi + pad};
  }

  /** Round tick values (1, 2 or 5 times a power of ten apart) within [lo, hi], about five of them. */
  static List<Double> ticks(double lo, double hi) {
    double raw = (hi - lo) / 5;
    double mag = Math.pow(10, Math.floor(Math.log10(raw)));
    double step = raw / mag >= 5 ? 5 * mag : raw / mag >= 2 ? 2 * mag : mag;
    List<Double> out = new ArrayList<>();
    for (double t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
      out.add(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return out;
  }

  private static String label(double v) {
    double a = Math.abs(v);
    if (a != 0 && (a >= 1e6 || a < 1e-3)) {
      return String.format(Locale.ROOT, "%.1e", v);
    }
    if (a >= 1000) {
      return String.format(Locale.ROOT, "%,.0f", v);
    }
    String s = String.format(Locale.ROOT, "%.4f", v).replaceAll("0+$", "");
    return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
  }
}
