package io.sparkps.spark;

import java.util.function.Consumer;

/**
 * A daemon thread that calls {@code tick(false)} every period until {@link #end()}, then
 * {@code tick(true)} once more and stops: how a run's listeners and its Spark UI publisher follow
 * the run and have the last word after it ended.
 */
final class UntilEnd {
  private final Object lock = new Object();
  private final String name;
  private final long periodMillis;
  private final Consumer<Boolean> tick;
  private Thread thread;
  private boolean ended;

  UntilEnd(String name, long periodMillis, Consumer<Boolean> tick) {
    this.name = name;
    this.periodMillis = periodMillis;
    this.tick = tick;
  }

  /** Starts the thread (once; later calls do nothing). */
  void start() {
    synchronized (lock) {
      if (thread == null) {
        thread = new Thread(this::loop, name);
        thread.setDaemon(true);
        thread.start();
      }
    }
  }

  /** Asks for the last tick; waits for it at most {@code waitMillis} (0: returns at once). */
  void end(long waitMillis) {
    Thread t;
    synchronized (lock) {
      ended = true;
      lock.notifyAll();
      t = thread;
    }
    if (t != null && waitMillis > 0) {
      try {
        t.join(waitMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void loop() {
    while (true) {
      boolean last;
      synchronized (lock) {
        if (!ended) {
          try {
            lock.wait(periodMillis);
          } catch (InterruptedException e) {
            return;
          }
        }
        last = ended;
      }
      tick.accept(last);
      if (last) {
        return;
      }
    }
  }
}
