package io.sparkps.ml.data;

import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An iterator whose next element can be made ahead, on a thread of its own, when the caller is
 * about to wait anyway: a worker asks for its next minibatch to be built while its step waits for
 * the parameter servers ({@link #prefetch()}), and builds it itself otherwise (on cores that the
 * other workers' gradients keep busy, building ahead would only take theirs). The source is
 * touched by one thread at a time.
 *
 * <p>{@link #close()} waits for the element in the making (so that the source's memory can be
 * released after it) and ends the thread. A failure of the source is thrown by {@link #next()},
 * with its own stack trace.
 */
public final class Prefetched<T> implements Iterator<T>, AutoCloseable {
  private static final Object END = new Object();
  private final Iterator<T> source;
  private final String name;
  private final Duration timeout;
  private final ExecutorService thread;
  /** The element being made on the prefetch thread, or null. */
  private Future<Object> ahead;
  /** The element made but not yet handed out, or null. */
  private Object made;
  private boolean closed;

  /**
   * Prefetches {@code source} on a daemon thread called {@code name}; waiting for one element
   * fails after {@code timeout}, with a message that names the thread.
   */
  public Prefetched(Iterator<T> source, String name, Duration timeout) {
    this.source = source;
    this.name = name;
    this.timeout = timeout;
    this.thread = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts making the next element on the prefetch thread, unless it is being made already. */
  public void prefetch() {
    checkOpen();
    if (ahead == null) {
      ahead = thread.submit(this::make);
    }
  }

  private Object make() {
    return source.hasNext() ? source.next() : END;
  }

  @Override
  public boolean hasNext() {
    return peek() != END;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T next() {
    Object next = peek();
    if (next == END) {
      throw new NoSuchElementException("the source has no more elements (" + name + ")");
    }
    made = null;
    return (T) next;
  }

  /** The next element, made ahead or now, kept until handed out. */
  private Object peek() {
    checkOpen();
    if (made == null) {
      made = ahead == null ? make() : await();
      ahead = null;
    }
    return made;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException(name + " is closed");
    }
  }

  private Object await() {
    try {
      return ahead.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw failure(e, name);
    } catch (TimeoutException e) {
      throw new IllegalStateException(name + " did not make the next element within " + timeout.toMillis()
          + " ms (a minibatch read from a slow or stuck disk?)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + name, e);
    }
  }

  /**
   * What to throw for a failure on the thread called {@code name}: an unchecked cause as it is,
   * with its own stack trace (an {@code Error} is thrown from here), a checked one wrapped.
   */
  public static RuntimeException failure(ExecutionException e, String name) {
    if (e.getCause() instanceof RuntimeException r) {
      return r;
    }
    if (e.getCause() instanceof Error err) {
      throw err;
    }
    return new IllegalStateException(name + " failed", e.getCause());
  }

  /**
   * Waits for the element in the making (at most the timeout), then ends the thread. Idempotent.
   * An interrupt does not cut the wait short (the caller releases the source's memory next, which
   * the element in the making may still be reading); it is kept for the caller to see.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    ahead = null;
    made = null;
    thread.shutdown();
    boolean interrupted = false;
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      while (true) {
        try {
          if (thread.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
            return;
          }
          thread.shutdownNow();
          throw new IllegalStateException(name + " was still making an element " + timeout.toMillis()
              + " ms after it was closed");
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
