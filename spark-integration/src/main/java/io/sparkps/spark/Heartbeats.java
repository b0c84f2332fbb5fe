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
  private volatile boolean finished;
  private volatile java.util.function.BiConsumer<Integer, String> onLostPs = (index, address) -> { };

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
  @Override
  public void flush() {
    beat();
  }

  /** Says, now and in every later beat, that this role's work is done: its silence is no hang. */
  void finished() {
    finished = true;
    beat();
  }

  /** Calls {@code listener} with each ps address the driver declared lost (on every beat). */
  void onLostPs(java.util.function.BiConsumer<Integer, String> listener) {
    this.onLostPs = listener;
  }

  /** Whether the coordinator said stop, or could not be reached {@code maxMissed} times in a row. */
  boolean shouldStop() {
    return stop || missed.get() >= maxMissed;
  }

  private void beat() {
    try {
      io.sparkps.spark.coord.proto.HeartbeatReply reply = coordinator.beat(io.sparkps.spark.coord.proto.HeartbeatRequest
          .newBuilder().setRole(role).setIndex(index).setAttempt(attempt).setProgress(latest.get())
          .setFinished(finished).build());
      stop |= reply.getStop();
      missed.set(0);
      for (io.sparkps.spark.coord.proto.LostPs l : reply.getLostPsList()) {
        try {
          onLostPs.accept(l.getIndex(), l.getAddress());
        } catch (RuntimeException e) {
          // dropping a connection is best effort: the calls there fail on their own deadline
        }
      }
    } catch (StatusRuntimeException e) {
      missed.incrementAndGet();
    }
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
