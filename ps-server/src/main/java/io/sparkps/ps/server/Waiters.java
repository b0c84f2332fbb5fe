package io.sparkps.ps.server;

import io.sparkps.ps.annotation.Internal;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Bounded waits that hold no thread: a call that must wait (a SYNC read, an SSP read, awaiting
 * initialization) registers a condition here and returns; every state change re-checks the
 * conditions. Each wait ends exactly once: ready, timed out, or cancelled with its call.
 *
 * <p>Conditions are checked under this object's lock and may take slice locks; callers must
 * therefore never call {@link #signal()} while holding a slice lock.
 */
@Internal
public final class Waiters {
  private final ScheduledExecutorService timer;
  private final Executor executor;
  private final List<Wait> pending = new ArrayList<>();

  /** Waits whose timeouts fire on {@code timer} and whose continuations run on {@code executor}. */
  public Waiters(ScheduledExecutorService timer, Executor executor) {
    this.timer = timer;
    this.executor = executor;
  }

  /** A registered wait; {@link #cancel()} ends it without running either continuation. */
  public final class Wait {
    private final Supplier<String> blocker;
    private final Runnable onReady;
    private final Consumer<String> onTimeout;
    private ScheduledFuture<?> timeout;

    private Wait(Supplier<String> blocker, Runnable onReady, Consumer<String> onTimeout) {
      this.blocker = blocker;
      this.onReady = onReady;
      this.onTimeout = onTimeout;
    }

    /** Ends the wait (its call was cancelled). */
    public void cancel() {
      if (remove(this)) {
        timeout.cancel(false);
      }
    }
  }

  /**
   * Waits until {@code blocker} returns null, at most {@code timeoutMs}. On timeout
   * {@code onTimeout} receives the blocker's last description of what is missing.
   */
  public Wait await(Supplier<String> blocker, long timeoutMs, Runnable onReady, Consumer<String> onTimeout) {
    Wait wait = new Wait(blocker, onReady, onTimeout);
    synchronized (this) {
      if (blocker.get() == null) {
        executor.execute(onReady);
        return wait;
      }
      pending.add(wait);
      wait.timeout = timer.schedule(() -> expire(wait), Math.max(1, timeoutMs), TimeUnit.MILLISECONDS);
    }
    return wait;
  }

  /** Re-checks every pending wait; call after any change that may unblock one. */
  public void signal() {
    List<Wait> ready = new ArrayList<>();
    synchronized (this) {
      pending.removeIf(w -> {
        if (w.blocker.get() == null) {
          ready.add(w);
          return true;
        }
        return false;
      });
    }
    for (Wait w : ready) {
      w.timeout.cancel(false);
      executor.execute(w.onReady);
    }
  }

  /** As {@link #signal}, on another thread: for a change made while a wait's blocker is being checked. */
  public void signalLater() {
    executor.execute(this::signal);
  }

  /** Pending waits (for tests and inspection). */
  public synchronized int size() {
    return pending.size();
  }

  private void expire(Wait wait) {
    String missing;
    synchronized (this) {
      if (!pending.remove(wait)) {
        return;
      }
      missing = wait.blocker.get();
    }
    if (missing == null) {
      executor.execute(wait.onReady);
    } else {
      executor.execute(() -> wait.onTimeout.accept(missing));
    }
  }

  private synchronized boolean remove(Wait wait) {
    return pending.remove(wait);
  }
}
