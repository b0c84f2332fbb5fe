package io.sparkps.spark;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.executor.ExecutorMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/**
 * The peak JVM heap use of each executor while its tasks ran, from the executor metrics Spark
 * reports with every task's end. Needs {@code spark.executor.metrics.pollingInterval} (for example
 * 100ms) for peaks between heartbeats.
 */
public final class ExecutorPeaks extends SparkListener {
  /** An executor's peaks, in bytes. */
  public record Peak(long heap) {}

  private final Map<String, Peak> peaks = new ConcurrentHashMap<>();

  @Override
  public void onTaskEnd(SparkListenerTaskEnd end) {
    ExecutorMetrics m = end.taskExecutorMetrics();
    if (m == null || end.taskInfo() == null) {
      return;
    }
    Peak p = new Peak(m.getMetricValue("JVMHeapMemory"));
    peaks.merge(end.taskInfo().executorId(), p, (a, b) -> new Peak(Math.max(a.heap(), b.heap())));
  }

  /** The peaks of executor {@code id}, or null when none of its tasks ended yet. */
  public Peak of(String id) {
    return peaks.get(id);
  }

  /** Forgets what it saw. */
  public void clear() {
    peaks.clear();
  }
}
