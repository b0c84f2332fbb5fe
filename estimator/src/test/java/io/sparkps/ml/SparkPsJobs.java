package io.sparkps.ml;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.sql.SparkSession;

/**
 * The jobs SparkPS launches (its ps, training and evaluator jobs run in job groups named
 * "sparkps-&lt;run&gt;-&lt;role&gt;"), seen by a listener: a test asserts that a refused fit started none. The
 * input checks' own queries run outside those groups and are not counted.
 */
final class SparkPsJobs extends SparkListener {
  private final List<String> seen = new ArrayList<>();
  private final SparkSession spark;

  private SparkPsJobs(SparkSession spark) {
    this.spark = spark;
  }

  /** Starts counting the SparkPS jobs of {@code spark}'s context. */
  static SparkPsJobs on(SparkSession spark) {
    SparkPsJobs jobs = new SparkPsJobs(spark);
    spark.sparkContext().addSparkListener(jobs);
    return jobs;
  }

  @Override
  public synchronized void onJobStart(SparkListenerJobStart start) {
    String group = start.properties() == null ? null : start.properties().getProperty("spark.jobGroup.id");
    String description = start.properties() == null ? null : start.properties().getProperty("spark.job.description");
    if (group != null && group.startsWith("sparkps-")) {
      seen.add(group);
    } else if (description != null && description.startsWith("control-")) {
      seen.add(description);
    }
    notifyAll();
  }

  /**
   * The SparkPS job groups started since the last call. A control job runs last: the listener bus
   * delivers in order, so every job started before it has been seen once it has (at most 20 s).
   */
  synchronized List<String> sinceLast() throws InterruptedException {
    String control = "control-" + UUID.randomUUID();
    spark.sparkContext().setLocalProperty("spark.job.description", control);
    try {
      spark.range(1).count();
    } finally {
      spark.sparkContext().setLocalProperty("spark.job.description", null);
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!seen.contains(control)) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        throw new AssertionError("the listener did not see the control job '" + control + "' within 20 s");
      }
      wait(left);
    }
    List<String> out = seen.stream().filter(s -> s.startsWith("sparkps-")).toList();
    seen.clear();
    return out;
  }
}
