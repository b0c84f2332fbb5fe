package io.sparkps.ps.server;

import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PsError;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A shard's reads that wait on their callers' threads, for the transports that give each
 * connection a thread of its own (the bulk port) or run in the caller's (memory in the shard's
 * JVM): a SYNC or SSP read returns once it no longer waits for other workers, at most the wait it
 * asks for within the shard's maximum, and fails at once when the shard stops. Table row pulls
 * and dense reads both wait here; gRPC calls wait on {@link Waiters} without holding a thread.
 */
@Internal
public final class BlockingWaits {
  private final Waiters waiters;
  private final long maxWaitMs;
  private final String name;
  /** The reads waiting now, with what each reads, failed at once when the shard stops. */
  private final Map<CompletableFuture<Void>, String> waiting = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** Waits of the shard called {@code name} ("ps 0") on {@code waiters}, each at most {@code maxWaitMs}. */
  public BlockingWaits(Waiters waiters, long maxWaitMs, String name) {
    this.waiters = waiters;
    this.maxWaitMs = maxWaitMs;
    this.name = name;
  }

  /** The wait of a read that asks for {@code askedMs}, capped at the shard's maximum (none asked: the maximum). */
  public long bound(long askedMs) {
    return askedMs > 0 ? Math.min(askedMs, maxWaitMs) : maxWaitMs;
  }

  /**
   * Returns once {@code blocker} says null (at once when it already does), waiting at most
   * {@link #bound}{@code (askedMs)}; then a {@link PsError} of kind TIMEOUT naming the shard,
   * {@code what} waited and for whom. A stop of the shard fails it at once, UNAVAILABLE.
   */
  public void await(Supplier<String> blocker, long askedMs, String what) {
    if (blocker.get() == null) {
      return; // ASYNC, or nothing to wait for: no hand-off
    }
    long timeoutMs = bound(askedMs);
    CompletableFuture<Void> ready = new CompletableFuture<>();
    waiting.put(ready, what);
    if (closed) {
      ready.completeExceptionally(stopped(what));
    }
    String[] missing = {null};
    Waiters.Wait wait = waiters.await(blocker, timeoutMs, () -> ready.complete(null), whom -> {
      missing[0] = whom;
      ready.complete(null);
    });
    try {
      ready.get(timeoutMs + 1000, TimeUnit.MILLISECONDS); // the timer ends it first; this only guards a lost timer
    } catch (InterruptedException e) {
      wait.cancel();
      Thread.currentThread().interrupt();
      throw stopped(what);
    } catch (ExecutionException e) {
      wait.cancel();
      throw e.getCause() instanceof PsError p ? p : stopped(what);
    } catch (TimeoutException e) {
      wait.cancel();
      throw PsError.timeout(name + ": waited " + timeoutMs + " ms for " + what + ": " + blocker.get());
    } finally {
      waiting.remove(ready);
    }
    if (missing[0] != null) {
      throw PsError.timeout(name + ": waited " + timeoutMs + " ms: " + missing[0]);
    }
  }

  /** Fails the reads waiting now, and any that would wait later: the shard is stopping. */
  public void close() {
    closed = true;
    waiting.forEach((f, what) -> f.completeExceptionally(stopped(what)));
  }

  private PsError stopped(String what) {
    return PsError.unavailable(name + " stopped serving while " + what + " waited for other workers");
  }
}
