package io.sparkps.spark;

import io.sparkps.spark.coord.Registry;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers a run's progress history to its {@link ProgressListener}s from one daemon thread,
 * started with the first listener: every 200 ms it hands on what the registry recorded since, and
 * after the run's end the rest and {@code onEnd}.
 */
final class Listeners {
  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);
  private static final long PERIOD_MS = 200;
  private final String runId;
  private final Registry registry;
  private final List<ProgressListener> listeners = new CopyOnWriteArrayList<>();
  private final UntilEnd thread;
  private long delivered;
  private volatile JobStatus endStatus;
  private volatile Throwable endFailure;

  Listeners(String runId, Registry registry) {
    this.runId = runId;
    this.registry = registry;
    this.thread = new UntilEnd("sparkps-listeners-" + runId, PERIOD_MS, this::deliver);
  }

  void add(ProgressListener listener) {
    listeners.add(listener);
    thread.start();
  }

  /** The run ended: deliver what is left, then {@code onEnd}. */
  void end(JobStatus status, Throwable failure) {
    endStatus = status;
    endFailure = failure;
    thread.end(0);
  }

  private void deliver(boolean last) {
    List<io.sparkps.spark.coord.History.Entry> fresh = registry.historySince(delivered);
    if (!fresh.isEmpty()) {
      delivered = fresh.get(fresh.size() - 1).seq() + 1;
    }
    long now = System.nanoTime();
    for (io.sparkps.spark.coord.History.Entry e : fresh) {
      TaskProgress p = Views.of(e.member(), now);
      listeners.forEach(l -> call(l, () -> l.onProgress(p)));
    }
    if (last) {
      listeners.forEach(l -> call(l, () -> l.onEnd(endStatus, endFailure)));
    }
  }

  private void call(ProgressListener listener, Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      LOG.warn("progress listener {} of run {} failed and is dropped", listener, runId, e);
      listeners.remove(listener);
    }
  }
}
