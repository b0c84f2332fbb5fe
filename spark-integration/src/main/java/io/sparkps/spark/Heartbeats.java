package io.sparkps.spark;

import io.grpc.StatusRuntimeException;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.proto.Progress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A task's progress reporter: keeps the latest report and sends it to the coordinator every
 * interval from a daemon thread it owns (stopped by {@link #close()}), learning whether the run
 * is stopping. After {@code maxMissed} failed heartbeats in a row the driver is taken for gone.
 */
final class Heartbeats implements ProgressReporter, AutoCloseable {
  private final CoordinatorClient coordinator;
  private final io.sparkps.spark.coord.proto.Role role;
  private final int index;
  private final int attempt;
  private final AtomicReference<Progress> latest = new AtomicReference<>(Progress.getDefaultInstance());
  private final AtomicInteger missed = new AtomicInteger();
  private final ScheduledExecutorService thread;
  private final int maxMissed;
  private volatile boolean stop;

  Heartbeats(CoordinatorClient coordinator, Role role, int index, int attempt, Duration interval, int maxMissed) {
    this.coordinator = coordinator;
    this.role = io.sparkps.spark.coord.proto.Role.valueOf(role.name());
    this.index = index;
    this.attempt = attempt;
    this.maxMissed = maxMissed;
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "sparkps-heartbeat-" + role + "-" + index);
      t.setDaemon(true);
      return t;
    });
    thread.scheduleWithFixedDelay(this::beat, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void report(long step, long examples, Map<String, Double> metrics) {
    latest.updateAndGet(p -> p.toBuilder().setStep(step).setExamples(examples).clearMetrics().putAllMetrics(metrics).build());
  }

  @Override
  public void message(String message) {
    latest.updateAndGet(p -> p.toBuilder().setMessage(message == null ? "" : message).build());
  }

  /** Sends the latest report now (e.g. the final one). */
  void flush() {
    beat();
  }

  /** Whether the coordinator said stop, or could not be reached {@code maxMissed} times in a row. */
  boolean shouldStop() {
    return stop || missed.get() >= maxMissed;
  }

  private void beat() {
    try {
      stop |= coordinator.heartbeat(role, index, attempt, latest.get());
      missed.set(0);
    } catch (StatusRuntimeException e) {
      missed.incrementAndGet();
    }
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
