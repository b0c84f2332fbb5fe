package io.sparkps.ps;

import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.StatusMapping;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * Runs one call on several shards in parallel and waits for all of them: the first failure is
 * thrown (mapped, naming the shard), later ones are attached as suppressed.
 */
final class Calls {
  /** Added to a call's own deadline before the client gives up waiting for its future. */
  private static final Duration MARGIN = Duration.ofSeconds(10);

  private Calls() {}

  static <T> List<T> all(List<ShardStub> shards, String op, Function<ShardStub, CompletableFuture<T>> call,
      Duration bound) {
    Map<ShardStub, CompletableFuture<T>> futures = new LinkedHashMap<>();
    shards.forEach(s -> futures.put(s, call.apply(s)));
    return await(futures, op, bound);
  }

  static <T> List<T> some(List<ShardStub> shards, Collection<Integer> which, String op,
      Function<ShardStub, CompletableFuture<T>> call, Duration bound) {
    Map<ShardStub, CompletableFuture<T>> futures = new LinkedHashMap<>();
    which.forEach(i -> futures.put(shards.get(i), call.apply(shards.get(i))));
    return await(futures, op, bound);
  }

  static <T> T one(ShardStub shard, String op, CompletableFuture<T> future, Duration bound) {
    return await(Map.of(shard, future), op, bound).get(0);
  }

  static <T> List<T> await(Map<ShardStub, CompletableFuture<T>> futures, String op, Duration bound) {
    long deadline = System.nanoTime() + bound.plus(MARGIN).toNanos();
    List<T> results = new ArrayList<>(futures.size());
    RuntimeException first = null;
    for (Map.Entry<ShardStub, CompletableFuture<T>> e : futures.entrySet()) {
      RuntimeException failure = null;
      try {
        results.add(e.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
      } catch (ExecutionException ex) {
        failure = StatusMapping.toException(ex.getCause(), e.getKey().describe(), op);
      } catch (TimeoutException ex) {
        e.getValue().cancel(true);
        failure = new PsTimeoutException(e.getKey().describe() + ": " + op + " got no answer within "
            + bound.plus(MARGIN).toMillis() + " ms", ex);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        failure = new PsException(e.getKey().describe() + ": " + op + " was interrupted", ex);
      }
      if (failure != null && first == null) {
        first = failure;
      } else if (failure != null) {
        first.addSuppressed(failure);
      }
    }
    if (first != null) {
      throw first;
    }
    return results;
  }
}
