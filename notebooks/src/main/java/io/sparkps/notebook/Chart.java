package io.sparkps.notebook;

import java.awt.image.BufferedImage;
import java.util.List;
import java.util.stream.Collectors;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * A line chart for a notebook (loss or accuracy against the step, say): add series with
 * {@link #line}, then make it a cell's value or {@link Notebook#display(Object) display} it.
 * A line of 10 points or more is drawn raw (thin, faint) and smoothed (an exponential moving
 * average, as the run's report and the Spark UI draw it), on a white plot with light grid lines.
 * Drawn by JFreeChart as a PNG; nothing is fetched.
 */
public final class Chart {
  private final String title;
  private final XYSeriesCollection series = new XYSeriesCollection();
  private String xLabel = "step";
  private String yLabel = "";
  private int width = 720;
  private int height = 360;

  Chart(String title) {
    this.title = title;
  }

  /** Names the axes. */
  public Chart axes(String xLabel, String yLabel) {
    this.xLabel = xLabel;
    this.yLabel = yLabel;
    return this;
  }

  /** Sets the picture's size in pixels. */
  public Chart size(int width, int height) {
    if (width < 50 || height < 50) {
      throw new IllegalArgumentException("a chart needs at least 50x50 pixels, got " + width + "x" + height);
    }
    this.width = width;
    this.height = height;
    return this;
  }

  /** Adds a line through the points (xs[i], ys[i]). */
  public Chart line(String name, List<? extends Number> xs, List<? extends Number> ys) {
    if (xs.size() != ys.size()) {
      throw new IllegalArgumentException("line '" + name + "' has " + xs.size() + " x values and " + ys.size()
          + " y values; give one y per x");
    }
    XYSeries s = new XYSeries(name, false, true);
    for (int i = 0; i < xs.size(); i++) {
      s.add(xs.get(i), ys.get(i));
    }
    series.addSeries(s);
    return this;
  }

  private static final java.awt.Color[] COLORS = {new java.awt.Color(0x1f77b4), new java.awt.Color(0xe6550d),
      new java.awt.Color(0x2ca02c), new java.awt.Color(0x9467bd), new java.awt.Color(0xd62728),
      new java.awt.Color(0x8c564b)};

  /** The chart drawn. */
  public BufferedImage image() {
    XYSeriesCollection drawn = new XYSeriesCollection();
    org.jfree.chart.renderer.xy.XYLineAndShapeRenderer renderer =
        new org.jfree.chart.renderer.xy.XYLineAndShapeRenderer(true, false);
    for (int i = 0; i < series.getSeriesCount(); i++) {
      XYSeries line = series.getSeries(i);
      java.awt.Color color = COLORS[i % COLORS.length];
      if (line.getItemCount() >= 10) {
        double[] ys = new double[line.getItemCount()];
        for (int k = 0; k < ys.length; k++) {
          ys[k] = line.getY(k).doubleValue();
        }
        double[] smooth = io.sparkps.spark.ui.SvgChart.smoothed(ys, Math.min(0.97, Math.max(0.6, 1 - 8.0 / ys.length)));
        XYSeries raw = new XYSeries(line.getKey() + " (raw)", false, true);
        XYSeries smoothed = new XYSeries(line.getKey(), false, true);
        for (int k = 0; k < ys.length; k++) {
          raw.add(line.getX(k), line.getY(k));
          smoothed.add(line.getX(k).doubleValue(), smooth[k]);
        }
        int r = drawn.getSeriesCount();
        drawn.addSeries(raw);
        renderer.setSeriesPaint(r, new java.awt.Color(color.getRed(), color.getGreen(), color.getBlue(), 70));
        renderer.setSeriesStroke(r, new java.awt.BasicStroke(1f));
        renderer.setSeriesVisibleInLegend(r, false);
        drawn.addSeries(smoothed);
        renderer.setSeriesPaint(r + 1, color);
        renderer.setSeriesStroke(r + 1, new java.awt.BasicStroke(2.2f));
      } else {
        int r = drawn.getSeriesCount();
        drawn.addSeries(line);
        renderer.setSeriesPaint(r, color);
        renderer.setSeriesStroke(r, new java.awt.BasicStroke(2.2f));
      }
    }
    JFreeChart chart = ChartFactory.createXYLineChart(title, xLabel, yLabel, drawn, PlotOrientation.VERTICAL,
        series.getSeriesCount() > 1, false, false);
    org.jfree.chart.plot.XYPlot plot = chart.getXYPlot();
    plot.setRenderer(renderer);
    plot.setBackgroundPaint(java.awt.Color.WHITE);
    plot.setDomainGridlinePaint(new java.awt.Color(0xe5e5e5));
    plot.setRangeGridlinePaint(new java.awt.Color(0xe5e5e5));
    plot.setOutlinePaint(new java.awt.Color(0xbbbbbb));
    chart.setBackgroundPaint(java.awt.Color.WHITE);
    chart.getTitle().setFont(new java.awt.Font("SansSerif", java.awt.Font.BOLD, 14));
    return chart.createBufferedImage(width, height);
  }

  @Override
  public String toString() {
    return "chart '" + title + "': " + ((List<?>) series.getSeries()).stream()
        .map(s -> ((XYSeries) s).getKey() + " (" + ((XYSeries) s).getItemCount() + " points)")
        .collect(Collectors.joining(", "));
  }
}
