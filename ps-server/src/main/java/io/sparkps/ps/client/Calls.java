package io.sparkps.ps.client;

import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.wire.StatusMapping;
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

  /**
   * Decides, for a call to a shard that failed, whether the shard was replaced (the caller then
   * repeats that shard's part against the replacement) or the failure stands.
   */
  interface Recoverer {
    Recoverer NONE = (shard, failure) -> false;

    boolean recover(ShardStub failed, RuntimeException failure);
  }

  /** Shard parts a call repeats, at most, after their shards were replaced. */
  private static final int MAX_REPLACEMENTS = 3;

  static <T> List<T> all(List<ShardStub> shards, String op, Function<ShardStub, CompletableFuture<T>> call,
      Duration bound, Recoverer recoverer) {
    Map<Integer, Function<ShardStub, CompletableFuture<T>>> calls = new LinkedHashMap<>();
    for (int i = 0; i < shards.size(); i++) {
      calls.put(i, call);
    }
    return run(shards, calls, op, bound, recoverer);
  }

  static <T> List<T> some(List<ShardStub> shards, Collection<Integer> which, String op,
      Function<ShardStub, CompletableFuture<T>> call, Duration bound, Recoverer recoverer) {
    Map<Integer, Function<ShardStub, CompletableFuture<T>>> calls = new LinkedHashMap<>();
    which.forEach(i -> calls.put(i, call));
    return run(shards, calls, op, bound, recoverer);
  }

  static <T> T one(ShardStub shard, String op, CompletableFuture<T> future, Duration bound) {
    return await(Map.of(shard, future), op, bound).get(0);
  }

  /**
   * Runs each shard's part of a call in parallel (on the shard's current stub) and waits for all;
   * a part whose shard {@code recoverer} finds replaced is run again there, and only that part, so
   * that the parts other shards took are not repeated. Results come in the order of {@code calls}.
   */
  static <T> List<T> run(List<ShardStub> shards, Map<Integer, Function<ShardStub, CompletableFuture<T>>> calls,
      String op, Duration bound, Recoverer recoverer) {
    Map<Integer, T> results = new LinkedHashMap<>();
    calls.keySet().forEach(i -> results.put(i, null));
    Map<Integer, Function<ShardStub, CompletableFuture<T>>> todo = calls;
    for (int round = 0; ; round++) {
      Map<ShardStub, CompletableFuture<T>> futures = new LinkedHashMap<>();
      Map<ShardStub, Integer> index = new LinkedHashMap<>();
      todo.forEach((i, call) -> {
        ShardStub stub = shards.get(i);
        index.put(stub, i);
        CompletableFuture<T> f;
        try {
          f = call.apply(stub);
        } catch (RuntimeException e) {
          f = CompletableFuture.failedFuture(e);
        }
        futures.put(stub, f);
      });
      Map<ShardStub, Object> outcomes = settle(futures, op, bound);
      Map<Integer, Function<ShardStub, CompletableFuture<T>>> again = new LinkedHashMap<>();
      RuntimeException first = null;
      for (Map.Entry<ShardStub, Object> e : outcomes.entrySet()) {
        int i = index.get(e.getKey());
        if (!(e.getValue() instanceof Failure failure)) {
          @SuppressWarnings("unchecked")
          T value = (T) e.getValue();
          results.put(i, value);
        } else if (round < MAX_REPLACEMENTS && first == null && recoverer.recover(e.getKey(), failure.error())) {
          again.put(i, todo.get(i));
        } else if (first == null) {
          first = failure.error();
        } else {
          first.addSuppressed(failure.error());
        }
      }
      if (first != null) {
        throw first;
      }
      if (again.isEmpty()) {
        return new ArrayList<>(results.values());
      }
      todo = again;
    }
  }

  /** A failed part, as {@link #settle} returns it. */
  private record Failure(RuntimeException error) {}

  static <T> List<T> await(Map<ShardStub, CompletableFuture<T>> futures, String op, Duration bound) {
    List<T> results = new ArrayList<>(futures.size());
    RuntimeException first = null;
    for (Object outcome : settle(futures, op, bound).values()) {
      if (outcome instanceof Failure f) {
        if (first == null) {
          first = f.error();
        } else {
          first.addSuppressed(f.error());
        }
      } else {
        @SuppressWarnings("unchecked")
        T value = (T) outcome;
        results.add(value);
      }
    }
    if (first != null) {
      throw first;
    }
    return results;
  }

  /** Waits for every future (all within one deadline); each one's value, or its mapped failure. */
  private static <T> Map<ShardStub, Object> settle(Map<ShardStub, CompletableFuture<T>> futures, String op,
      Duration bound) {
    long deadline = System.nanoTime() + bound.plus(MARGIN).toNanos();
    Map<ShardStub, Object> outcomes = new LinkedHashMap<>();
    for (Map.Entry<ShardStub, CompletableFuture<T>> e : futures.entrySet()) {
      try {
        outcomes.put(e.getKey(), e.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
      } catch (ExecutionException ex) {
        Throwable cause = ex.getCause() instanceof java.util.concurrent.CompletionException c && c.getCause() != null
            ? c.getCause() : ex.getCause();
        outcomes.put(e.getKey(), new Failure(cause instanceof PsException || cause instanceof IllegalArgumentException
            || cause instanceof IllegalStateException ? (RuntimeException) cause
            : StatusMapping.toException(cause, e.getKey().describe(), op)));
      } catch (TimeoutException ex) {
        e.getValue().cancel(true);
        outcomes.put(e.getKey(), new Failure(new PsTimeoutException(e.getKey().describe() + ": " + op
            + " got no answer within " + bound.plus(MARGIN).toMillis() + " ms", ex)));
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        outcomes.put(e.getKey(), new Failure(new PsException(e.getKey().describe() + ": " + op + " was interrupted", ex)));
      }
    }
    return outcomes;
  }
}
