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
 * One element ahead of an iterator, made on a thread of its own: handing out an element starts
 * making the next, so a worker's next minibatch is built while its step waits for the parameter
 * servers, not after. The source is only ever touched by that thread, one call at a time.
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
  private Future<Object> ahead;

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
    this.ahead = thread.submit(this::make);
  }

  private Object make() {
    return source.hasNext() ? source.next() : END;
  }

  @Override
  public boolean hasNext() {
    return await() != END;
  }

  @Override
  @SuppressWarnings("unchecked")
  public T next() {
    Object next = await();
    if (next == END) {
      throw new NoSuchElementException("the source has no more elements (" + name + ")");
    }
    ahead = thread.submit(this::make);
    return (T) next;
  }

  private Object await() {
    if (ahead == null) {
      throw new IllegalStateException(name + " is closed");
    }
    try {
      return ahead.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(name + " failed", e.getCause());
    } catch (TimeoutException e) {
      throw new IllegalStateException(name + " did not make the next element within " + timeout.toMillis()
          + " ms (a minibatch read from a slow or stuck disk?)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + name, e);
    }
  }

  /** Waits for the element in the making (at most the timeout), then ends the thread. Idempotent. */
  @Override
  public void close() {
    if (ahead == null) {
      return;
    }
    ahead = null;
    thread.shutdown();
    try {
      if (!thread.awaitTermination(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        thread.shutdownNow();
        throw new IllegalStateException(name + " was still making an element " + timeout.toMillis()
            + " ms after it was closed");
      }
    } catch (InterruptedException e) {
      thread.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
