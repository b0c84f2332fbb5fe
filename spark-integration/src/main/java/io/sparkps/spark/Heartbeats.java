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
 * A task's progress reporter: keeps the latest report and the records since the last heartbeat
 * (a worker's every {@code recordEvery}-th step, each of the evaluator's reports), and sends them
 * to the coordinator every interval from a daemon thread it owns (stopped by {@link #close()}),
 * learning whether the run is stopping. A report costs a map copy and a queue append on the
 * caller's thread; the sending is the heartbeat thread's. While the driver cannot be reached the
 * records wait, at most {@link #MAX_PENDING} (older ones are dropped and counted). After
 * {@code maxMissed} failed heartbeats in a row the driver is taken for gone.
 */
final class Heartbeats implements ProgressReporter, AutoCloseable {
  private final CoordinatorClient coordinator;
  private final io.sparkps.spark.coord.proto.Role role;
  private final int index;
  private final int attempt;
  /** Records held for the driver at most (a minute of 1 ms steps per worker); older ones are dropped. */
  static final int MAX_PENDING = 60_000;
  /** Records one heartbeat carries at most (about 200 bytes each). */
  static final int MAX_PER_BEAT = 5_000;
  private final AtomicReference<Progress> latest = new AtomicReference<>(Progress.getDefaultInstance());
  private final PendingRecords pending = new PendingRecords(MAX_PENDING);
  private final int recordEvery;
  private final boolean everyReport;
  private final Object beatLock = new Object();
  private final AtomicInteger missed = new AtomicInteger();
  private final ScheduledExecutorService thread;
  private final int maxMissed;
  private volatile boolean stop;
  private volatile boolean finished;
  private volatile java.util.function.BiConsumer<Integer, String> onLostPs = (index, address) -> { };

  Heartbeats(CoordinatorClient coordinator, Role role, int index, int attempt, Duration interval, int maxMissed) {
    this(coordinator, role, index, attempt, interval, maxMissed, 1);
  }

  /** As above, recording a worker's every {@code recordEvery}-th step (the evaluator's every report). */
  Heartbeats(CoordinatorClient coordinator, Role role, int index, int attempt, Duration interval, int maxMissed,
      int recordEvery) {
    this.recordEvery = Math.max(1, recordEvery);
    this.everyReport = role == Role.EVALUATOR;
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
    Progress p = latest.updateAndGet(old -> old.toBuilder().setStep(step).setExamples(examples).clearMetrics()
        .putAllMetrics(metrics).setTimeMillis(System.currentTimeMillis()).build());
    if (everyReport || step % recordEvery == 0) {
      pending.add(p);
    }
  }

  @Override
  public void message(String message) {
    latest.updateAndGet(p -> p.toBuilder().setMessage(message == null ? "" : message).build());
  }

  /** Sends the latest report now (e.g. the final one). */
  @Override
  public void flush() {
    pending.addUnlessRecorded(latest.get());
    beat();
  }

  /** Says, now and in every later beat, that this role's work is done: its silence is no hang. */
  void finished() {
    finished = true;
    pending.addUnlessRecorded(latest.get());
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

  /**
   * Sends the latest report and the records since the last beat; one beat at a time, so records
   * keep their order (a report never waits for a beat: the queue has its own lock).
   */
  private void beat() {
    synchronized (beatLock) {
      beatOnce();
    }
  }

  private void beatOnce() {
    java.util.List<Progress> records = pending.take(MAX_PER_BEAT);
    try {
      io.sparkps.spark.coord.proto.HeartbeatReply reply = coordinator.beat(io.sparkps.spark.coord.proto.HeartbeatRequest
          .newBuilder().setRole(role).setIndex(index).setAttempt(attempt).setProgress(latest.get())
          .addAllRecords(records).setDroppedRecords(pending.dropped()).setFinished(finished).build());
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
      pending.putBack(records);
      missed.incrementAndGet();
    }
  }

  /**
   * Stops the heartbeats; records still waiting go to the driver first (a failed task's last
   * steps belong to its run's record) unless the last beat failed, so a gone driver costs no wait.
   */
  @Override
  public void close() {
    thread.shutdownNow();
    if (!pending.isEmpty() && missed.get() == 0) {
      beat();
    }
  }
}
