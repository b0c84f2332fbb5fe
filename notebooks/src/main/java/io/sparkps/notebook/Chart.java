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

  /** The chart drawn. */
  public BufferedImage image() {
    JFreeChart chart = ChartFactory.createXYLineChart(title, xLabel, yLabel, series, PlotOrientation.VERTICAL,
        series.getSeriesCount() > 1, false, false);
    return chart.createBufferedImage(width, height);
  }

  @Override
  public String toString() {
    return "chart '" + title + "': " + ((List<?>) series.getSeries()).stream()
        .map(s -> ((XYSeries) s).getKey() + " (" + ((XYSeries) s).getItemCount() + " points)")
        .collect(Collectors.joining(", "));
  }
}
