package io.sparkps.notebook;

import io.sparkps.ml.FitJob;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.TrainingJob;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeoutException;
import org.apache.spark.sql.SparkSession;
import org.dflib.jjava.jupyter.kernel.DisplayStream;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;

/**
 * What a notebook cell has at hand (the kernel imports these statically): the Spark session,
 * {@link #display(Object)} for rich output mid-cell, live {@link #progress(FitJob)} of a run, and
 * {@link #chart(String)} for plots. Outside the kernel (plain Java, tests) displays print their
 * text form to {@code System.out}.
 */
public final class Notebook {
  private static final Properties BUILD = load();
  private static volatile DisplayStream display;
  private static volatile SparkSession embedded;

  private Notebook() {}

  /**
   * The notebook's Spark session: the one already running in this JVM, else an embedded
   * {@code local[N]} Spark with N = max(cores, 4) task slots, so that a parameter server, two
   * workers and an evaluator fit. Driver on 127.0.0.1, Spark's console progress bar off (the
   * kernel shows progress), WARN logs.
   */
  public static SparkSession spark() {
    SparkSession s = SparkSession.getDefaultSession().isDefined() ? SparkSession.getDefaultSession().get() : null;
    return s != null && !s.sparkContext().isStopped() ? s
        : spark("local[" + Math.max(Runtime.getRuntime().availableProcessors(), 4) + "]");
  }

  /** A Spark session on {@code master} ({@code local[6]}, {@code yarn}, ...), made if none runs. */
  public static synchronized SparkSession spark(String master) {
    SparkSession.Builder b = SparkSession.builder().appName("sparkps-notebook").master(master)
        .config("spark.ui.showConsoleProgress", "false");
    if (master.startsWith("local")) {
      b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1");
    }
    SparkSession session = b.getOrCreate();
    session.sparkContext().setLogLevel("WARN");
    embedded = session;
    return session;
  }

  /** Stops the session {@link #spark()} made, if any (the kernel does at shutdown). */
  public static synchronized void stopSpark() {
    if (embedded != null) {
      embedded.stop();
      embedded = null;
    }
  }

  /**
   * Shows {@code value} below the cell now, as the cell's last expression would be shown: a
   * {@code Dataset} as a table, a {@link Chart} or image inline, a job as its progress.
   */
  public static void display(Object value) {
    DisplayData data = Displays.render(value);
    DisplayStream stream = display;
    if (stream != null && stream.isAttached()) {
      stream.display(data);
    } else {
      System.out.println(Displays.text(data));
    }
  }

  /** HTML to {@link #display(Object)}. */
  public static DisplayData html(String html) {
    DisplayData d = new DisplayData(html.replaceAll("<[^>]+>", ""));
    d.putHTML(html);
    return d;
  }

  /** Markdown to {@link #display(Object)}. */
  public static DisplayData markdown(String markdown) {
    DisplayData d = new DisplayData(markdown);
    d.putMarkdown(markdown);
    return d;
  }

  /** A line chart to fill with {@link Chart#line}; shown inline as a PNG. */
  public static Chart chart(String title) {
    return new Chart(title);
  }

  /**
   * Shows the fit's progress live (per task: step of total, loss, examples/s; the evaluator's
   * metrics), updated in place twice a second until the run ends; returns how it ended. An
   * interrupt of the cell cancels the run.
   */
  public static JobStatus progress(FitJob job) throws InterruptedException, TimeoutException {
    return new ProgressDisplay("fit " + job.runId(), job::status, job::progress, job.totalSteps()).follow(display);
  }

  /** Shows a training run's progress live until it ends; see {@link #progress(FitJob)}. */
  public static JobStatus progress(TrainingJob<?> job) throws InterruptedException, TimeoutException {
    return new ProgressDisplay("run " + job.runId(), job::status, job::progress, -1).follow(display);
  }

  /**
   * Shows {@code job}'s progress until it ends, at most {@code timeout}: then a TimeoutException
   * names the run and where it stands (the run goes on). See {@link #progress(FitJob)}.
   */
  public static JobStatus progress(FitJob job, Duration timeout) throws InterruptedException, TimeoutException {
    return new ProgressDisplay("fit " + job.runId(), job::status, job::progress, job.totalSteps())
        .withTimeout(timeout).follow(display);
  }

  /**
   * A listener that shows a run's progress live below the cell that runs it, for fits that do
   * not hand out a job: {@code estimator.addListener(liveProgress("fashion-mnist"))}, then
   * {@code pipeline.fit(train)}.
   */
  public static ProgressListener liveProgress(String title) {
    return new LiveProgress(title, display);
  }

  /** SparkPS's version. */
  public static String version() {
    return BUILD.getProperty("version", "unknown");
  }

  /**
   * The file name of SparkPS's shaded jar for this kernel's Scala version, as the build names it
   * ({@code sparkps-estimator_2.12-<version>-all.jar}): what {@code spark-submit} is given.
   */
  public static String shadedJarName() {
    return "sparkps-estimator_" + BUILD.getProperty("scalaBinaryVersion", "unknown") + "-" + version() + "-all.jar";
  }

  /** Spark's {@code --add-opens} list for Java 17, as the build knows it. */
  static String addOpens() {
    return BUILD.getProperty("addOpens", "");
  }

  static void attach(DisplayStream stream) {
    display = stream;
  }

  private static Properties load() {
    Properties p = new Properties();
    try (InputStream in = Notebook.class.getResourceAsStream("kernel.properties")) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the kernel's build properties", e);
    }
    return p;
  }
}
