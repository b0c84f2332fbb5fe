package io.sparkps.ml.tracking;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a run's progress as TensorBoard scalars into a directory of its own below a log directory
 * (one run per subdirectory, so TensorBoard pointed at the log directory compares runs): every
 * record's metrics at its step and time, named as in MLflow (the chief's by their own names, {@code
 * worker1/loss}, {@code eval/accuracy}), and each worker's throughput, {@code examplesPerSecond}
 * (with its prefix), between two of its records; with {@link #histograms} set, every N steps of the
 * chief the histogram of each variable's values ({@code params/<variable>}), read from the parameter
 * servers on a thread of its own (never on the thread that hands out progress). The file is made
 * visible to readers about every second as it grows. A file system that fails never fails training:
 * the trouble is logged once and the run goes on without it.
 */
public final class TensorBoardLogging implements ProgressListener {
  private static final Logger LOG = LoggerFactory.getLogger(TensorBoardLogging.class);
  private static final long FLUSH_NANOS = 1_000_000_000L;
  private final Path dir;
  private final java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
  private TensorBoardEvents events;
  private long lastFlush = System.nanoTime();
  /** Per worker: its last record's examples and time, for its throughput. */
  private final Map<String, long[]> last = new HashMap<>();
  /** Where histograms' values come from (none: no histograms), how often, and the thread that reads them. */
  private java.util.function.Supplier<Map<String, float[]>> histogramValues;
  private long histogramEvery;
  private long nextHistogram;
  private java.util.concurrent.ExecutorService histogramReader;
  private boolean histogramFailed;
  /** How long the run's end waits for a histogram being read. */
  private static final long HISTOGRAM_END_SECONDS = 30;

  private TensorBoardLogging(Path dir, TensorBoardEvents events) {
    this.dir = dir;
    this.events = events;
  }

  /**
   * The directory below {@code logDir} where run {@code run} writes: refuses a log directory whose
   * file system Hadoop does not know, naming it, before anything starts.
   */
  public static Path runDir(String logDir, String run, Configuration conf) {
    Path dir = new Path(new Path(logDir), run);
    try {
      dir.getFileSystem(conf);
    } catch (IOException e) {
      throw new IllegalArgumentException("TensorBoard log directory '" + logDir + "' is on no file system this "
          + "Spark reaches (" + e.getMessage() + "): give a local path, hdfs://, s3a:// or another Hadoop URI", e);
    }
    return dir;
  }

  /** Starts a run's event file in {@code dir}; a file system that fails is logged and the run goes on. */
  public static TensorBoardLogging start(Path dir, Configuration conf) {
    try {
      FileSystem fs = dir.getFileSystem(conf);
      String host = java.net.InetAddress.getLocalHost().getHostName();
      return new TensorBoardLogging(dir, TensorBoardEvents.create(fs, dir, host, System.currentTimeMillis() / 1000.0));
    } catch (IOException e) {
      LOG.warn("TensorBoard: no event file in {} ({}); training goes on", dir, e.toString());
      return new TensorBoardLogging(dir, null);
    }
  }

  /**
   * Writes the histogram of each variable {@code values} gives (its name to its values: say the
   * network's weights, read from the parameter servers) at the chief's steps {@code everySteps}
   * apart, the first at the chief's first record. A read that fails or gives nothing is skipped (the
   * first failure is logged). Call before the run's progress is handed on.
   */
  public synchronized TensorBoardLogging histograms(java.util.function.Supplier<Map<String, float[]>> values,
      long everySteps) {
    if (everySteps <= 0) {
      throw new IllegalArgumentException("histograms every " + everySteps + " steps: give a positive number");
    }
    this.histogramValues = values;
    this.histogramEvery = everySteps;
    this.histogramReader = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "sparkps-tensorboard-histograms");
      t.setDaemon(true);
      return t;
    });
    return this;
  }

  /** The directory this run writes to. */
  public Path dir() {
    return dir;
  }

  @Override
  public synchronized void onProgress(TaskProgress p) {
    if (events == null || p.role() == Role.PS || p.metrics().isEmpty()) {
      return;
    }
    String prefix = MlflowTracking.prefix(p);
    long time = p.timeMillis() > 0 ? p.timeMillis() : System.currentTimeMillis();
    double wall = time / 1000.0;
    try {
      for (Map.Entry<String, Double> m : p.metrics().entrySet()) {
        events.scalar(prefix + m.getKey(), p.step(), wall, m.getValue().floatValue());
      }
      if (p.role() != Role.EVALUATOR) {
        long[] before = last.put(prefix, new long[] {p.examples(), time});
        if (before != null && time > before[1] && p.examples() > before[0]) {
          events.scalar(prefix + "examplesPerSecond", p.step(), wall,
              (float) ((p.examples() - before[0]) * 1000.0 / (time - before[1])));
        }
      }
      if (histogramValues != null && p.role() == Role.CHIEF && p.step() >= nextHistogram) {
        nextHistogram = (p.step() / histogramEvery + 1) * histogramEvery;
        long step = p.step();
        try {
          histogramReader.execute(() -> writeHistograms(step));
        } catch (java.util.concurrent.RejectedExecutionException ended) {
          // the run's end came first
        }
      }
      long now = System.nanoTime();
      if (now - lastFlush >= FLUSH_NANOS || p.role() == Role.EVALUATOR) {
        events.flush();
        lastFlush = now;
      }
    } catch (IOException e) {
      fail(e);
    }
  }

  /** Reads the values (off the lock: it calls the parameter servers), then writes their histograms at {@code step}. */
  private void writeHistograms(long step) {
    Map<String, float[]> values;
    try {
      values = histogramValues.get();
    } catch (RuntimeException e) {
      synchronized (this) {
        if (!histogramFailed) {
          histogramFailed = true;
          LOG.warn("TensorBoard: the variables' values for the histograms of step {} could not be read ({}); the "
              + "scalars go on", step, e.toString());
        }
      }
      return;
    }
    synchronized (this) {
      if (events == null) {
        return;
      }
      double wall = System.currentTimeMillis() / 1000.0;
      try {
        for (Map.Entry<String, float[]> v : values.entrySet()) {
          events.histogram("params/" + v.getKey(), step, wall, v.getValue());
        }
        events.flush();
        lastFlush = System.nanoTime();
      } catch (IOException e) {
        fail(e);
      }
    }
  }

  @Override
  public void onEnd(JobStatus status, Throwable failure) {
    java.util.concurrent.ExecutorService reader;
    synchronized (this) {
      reader = histogramReader;
    }
    if (reader != null) {
      // a histogram being read is written before the file is closed (its reads are bounded); none starts after
      reader.shutdown();
      try {
        if (!reader.awaitTermination(HISTOGRAM_END_SECONDS, java.util.concurrent.TimeUnit.SECONDS)) {
          LOG.warn("TensorBoard: a histogram still being read {} s after the run's end is left out",
              HISTOGRAM_END_SECONDS);
          reader.shutdownNow();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    close();
  }

  private synchronized void close() {
    if (events != null) {
      try {
        events.close();
      } catch (IOException e) {
        fail(e);
      }
      events = null;
    }
    closed.countDown();
  }

  /**
   * Waits at most {@code timeout} for the run's end to be written (its last records and the file
   * closed, once every listener before this one had the end); whether it was.
   */
  public boolean awaitClosed(java.time.Duration timeout) throws InterruptedException {
    return closed.await(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  private void fail(IOException e) {
    LOG.warn("TensorBoard: writing {} failed ({}); the run goes on without it", events.file(), e.toString());
    try {
      events.close();
    } catch (IOException ignored) {
      // already failing
    }
    events = null;
  }
}
