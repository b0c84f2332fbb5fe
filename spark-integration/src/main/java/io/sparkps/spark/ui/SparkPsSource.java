package io.sparkps.spark.ui;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.source.Source;

/**
 * SparkPS in Spark's metrics system: a source named {@code sparkps} in the driver whose gauges
 * show the latest run (steps, examples, examples/s, loss, ps bytes, ps recoveries, stage attempts,
 * the evaluator's metrics) and whose counters count the application's runs by their end. Spark's
 * sinks (JMX, the Prometheus servlet, CSV, Graphite, ...) carry it as configured in
 * {@code spark.metrics.conf.*}; nothing else is needed.
 */
public final class SparkPsSource implements Source {
  private static volatile SparkPsSource registered;
  private static volatile SparkEnv registeredIn;

  private final MetricRegistry metrics = new MetricRegistry();
  private final Map<String, Double> values = new ConcurrentHashMap<>();
  private final Counter started = metrics.counter("runs.started");
  private final Counter succeeded = metrics.counter("runs.succeeded");
  private final Counter failed = metrics.counter("runs.failed");
  private final Counter cancelled = metrics.counter("runs.cancelled");

  private SparkPsSource() {
    for (String name : new String[] {"steps", "examples", "examplesPerSecond", "loss", "psBytes", "psRecoveries",
        "stageAttempts"}) {
      gauge("run." + name);
    }
  }

  private void gauge(String name) {
    values.putIfAbsent(name, 0.0);
    metrics.register(name, (Gauge<Double>) () -> values.getOrDefault(name, 0.0));
  }

  /** The driver's source, registered with its metrics system the first time (null without a SparkEnv). */
  public static synchronized SparkPsSource get() {
    SparkEnv env = SparkEnv.get();
    if (env == null) {
      return null;
    }
    if (registered == null || registeredIn != env) {
      registered = new SparkPsSource();
      registeredIn = env;
      env.metricsSystem().registerSource(registered);
    }
    return registered;
  }

  @Override
  public String sourceName() {
    return "sparkps";
  }

  @Override
  public MetricRegistry metricRegistry() {
    return metrics;
  }

  /** A run started. */
  public void runStarted() {
    started.inc();
  }

  /** A run ended with {@code status}. */
  public void runEnded(String status) {
    switch (status) {
      case "SUCCEEDED" -> succeeded.inc();
      case "FAILED" -> failed.inc();
      case "CANCELLED" -> cancelled.inc();
      default -> { }
    }
  }

  /** Sets gauge {@code run.<name>} (an evaluator metric's gauge, {@code run.evaluation.<name>}, is made on first use). */
  public synchronized void set(String name, double value) {
    String key = "run." + name;
    if (!values.containsKey(key)) {
      gauge(key);
    }
    values.put(key, value);
  }
}
