package io.sparkps.spark;

import io.sparkps.spark.coord.History;
import io.sparkps.spark.coord.Registry;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers a run's progress history to its {@link ProgressListener}s from one daemon thread,
 * started with the first listener: every 200 ms it hands each listener what the registry recorded
 * since that listener's last record, and after the run's end the rest and {@code onEnd}. Each
 * listener has its own place in the history, so one added while the run goes on gets the records
 * the others already had first, and one added after the end gets the whole history and the end at
 * once, on the thread that adds it.
 */
final class Listeners {
  private static final Logger LOG = LoggerFactory.getLogger(Listeners.class);
  private static final long PERIOD_MS = 200;
  private final String runId;
  private final Registry registry;
  private final UntilEnd thread;
  /** Guards the listeners and their places; held while they are called, so that each is called in order. */
  private final Object lock = new Object();
  private final List<Subscriber> subscribers = new ArrayList<>();
  /** The last delivery has run: a listener added now is served on the spot. */
  private boolean over;
  private volatile JobStatus endStatus;
  private volatile Throwable endFailure;

  /** A listener and the number of the next history record it is due. */
  private static final class Subscriber {
    final ProgressListener listener;
    long next;
    boolean dropped;

    Subscriber(ProgressListener listener) {
      this.listener = listener;
    }
  }

  Listeners(String runId, Registry registry) {
    this.runId = runId;
    this.registry = registry;
    this.thread = new UntilEnd("sparkps-listeners-" + runId, PERIOD_MS, this::deliver);
  }

  void add(ProgressListener listener) {
    synchronized (lock) {
      Subscriber s = new Subscriber(listener);
      subscribers.add(s);
      if (over) {
        deliver(s, true, System.nanoTime());
        return;
      }
    }
    thread.start();
  }

  /** The run ended: deliver what is left, then {@code onEnd}. */
  void end(JobStatus status, Throwable failure) {
    endStatus = status;
    endFailure = failure;
    thread.end(0);
  }

  private void deliver(boolean last) {
    synchronized (lock) {
      long now = System.nanoTime();
      // by index: a listener may add another while it is called, which is served in this same pass
      for (int i = 0; i < subscribers.size(); i++) {
        deliver(subscribers.get(i), last, now);
      }
      over = last;
    }
  }

  private void deliver(Subscriber s, boolean last, long now) {
    if (s.dropped) {
      return;
    }
    for (History.Entry e : registry.historySince(s.next)) {
      s.next = e.seq() + 1;
      TaskProgress p = Views.of(e.member(), now);
      if (!call(s, () -> s.listener.onProgress(p))) {
        return;
      }
    }
    if (last) {
      call(s, () -> s.listener.onEnd(endStatus, endFailure));
    }
  }

  /** Calls {@code r}; a listener that throws is dropped (and told nothing more). Whether it went well. */
  private boolean call(Subscriber s, Runnable r) {
    try {
      r.run();
      return true;
    } catch (RuntimeException e) {
      LOG.warn("progress listener {} of run {} failed and is dropped", s.listener, runId, e);
      s.dropped = true;
      return false;
    }
  }
}
