package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPullRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPushRequest;
import io.sparkps.ps.grpc.proto.EmbeddingRows;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.wire.Internal;
import io.sparkps.ps.wire.PackedArrays;
import io.sparkps.ps.wire.PsError;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A shard's row calls of its embedding tables, whichever transport brings them (gRPC, the bulk
 * port, or memory in the shard's own JVM): a batch of pulls answered once none of its SYNC or SSP
 * tables waits for other workers (bounded), and a batch of pushes checked whole, applied table by
 * table, and then the waiting pulls woken.
 */
@Internal
public final class TableCalls {
  private final EmbeddingTables tables;
  private final Waiters waiters;
  private final long maxWaitMs;
  private final String name;
  /** The pulls waiting on their callers' threads now, failed at once when the shard stops. */
  private final java.util.Set<CompletableFuture<Void>> waiting = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /**
   * The calls of {@code tables} of the shard called {@code name} ("ps 0"), whose waits
   * {@code waiters} holds, each at most {@code maxWaitMs}.
   */
  public TableCalls(EmbeddingTables tables, Waiters waiters, long maxWaitMs, String name) {
    this.tables = tables;
    this.waiters = waiters;
    this.maxWaitMs = maxWaitMs;
    this.name = name;
    tables.onStepApplied(waiters::signalLater); // a pull caught a restored SYNC table up: others may go on
  }

  /** The tables these calls reach. */
  public EmbeddingTables tables() {
    return tables;
  }

  /**
   * What the first training pull of {@code batch} still waits for (another worker's step), or
   * null when the batch may be answered now.
   */
  public String blocker(EmbeddingPullBatch batch) {
    for (EmbeddingPullRequest r : batch.getTablesList()) {
      String blocked = r.getTrain() ? tables.blocker(r.getTable(), r.getWorker(), r.getStep()) : null;
      if (blocked != null) {
        return blocked;
      }
    }
    return null;
  }

  /** The rows of every pull of {@code batch}, in its order (call once {@link #blocker} is null). */
  public EmbeddingRowsBatch rows(EmbeddingPullBatch batch) {
    EmbeddingRowsBatch.Builder reply = EmbeddingRowsBatch.newBuilder();
    for (EmbeddingPullRequest r : batch.getTablesList()) {
      reply.addTables(EmbeddingRows.newBuilder().setValues(PackedArrays.ofFloats(
          tables.pull(r.getTable(), PackedArrays.longs(r.getIds(), "ids"), r.getStep(), r.getTrain()))));
    }
    return reply.build();
  }

  /** The longest wait {@code batch} asks for, capped at the shard's maximum (none asked: the maximum). */
  public long waitBound(EmbeddingPullBatch batch) {
    long asked = batch.getTablesList().stream().mapToLong(EmbeddingPullRequest::getTimeoutMs).max().orElse(0);
    return asked > 0 ? Math.min(asked, maxWaitMs) : maxWaitMs;
  }

  /**
   * The rows of {@code batch}, waiting on the calling thread (for a transport that gives each
   * connection a thread of its own) until no table of it is blocked, at most {@link #waitBound};
   * then a {@link PsError} of kind TIMEOUT naming the shard and what it waited for.
   */
  public EmbeddingRowsBatch rowsWhenReadable(EmbeddingPullBatch batch) {
    long timeoutMs = waitBound(batch);
    if (blocker(batch) == null) {
      return rows(batch); // ASYNC tables, reads, or nothing to wait for: no hand-off
    }
    CompletableFuture<Void> ready = new CompletableFuture<>();
    waiting.add(ready);
    if (closed) {
      ready.completeExceptionally(stopped());
    }
    String[] missing = {null};
    Waiters.Wait wait = waiters.await(() -> blocker(batch), timeoutMs, () -> ready.complete(null), what -> {
      missing[0] = what;
      ready.complete(null);
    });
    try {
      ready.get(timeoutMs + 1000, TimeUnit.MILLISECONDS); // the timer ends it first; this only guards a lost timer
    } catch (InterruptedException e) {
      wait.cancel();
      Thread.currentThread().interrupt();
      throw stopped();
    } catch (ExecutionException e) {
      wait.cancel();
      throw e.getCause() instanceof PsError p ? p : stopped();
    } catch (TimeoutException e) {
      wait.cancel();
      throw PsError.timeout(name + ": waited " + timeoutMs + " ms for embedding rows: " + blocker(batch));
    } finally {
      waiting.remove(ready);
    }
    if (missing[0] != null) {
      throw PsError.timeout(name + ": waited " + timeoutMs + " ms: " + missing[0]);
    }
    return rows(batch);
  }

  /** Fails the pulls waiting on their callers' threads, and any that would wait later: the shard is stopping. */
  public void close() {
    closed = true;
    for (CompletableFuture<Void> f : waiting) {
      f.completeExceptionally(stopped());
    }
  }

  private PsError stopped() {
    return PsError.unavailable(name + " stopped serving while a pull of embedding rows waited for other workers");
  }

  /**
   * Applies pushes (gradients, or a refill's rows) table by table, once all are checked, and wakes
   * the pulls that wait for them.
   */
  public UpdateReply push(List<EmbeddingPushRequest> pushes) {
    List<long[]> ids = new ArrayList<>(pushes.size());
    List<float[]> values = new ArrayList<>(pushes.size());
    for (EmbeddingPushRequest r : pushes) {
      ids.add(PackedArrays.longs(r.getIds(), "ids"));
      values.add(PackedArrays.floats(r.getGradients(), r.getAssign() ? "rows" : "gradients"));
      tables.check(r.getTable(), ids.get(ids.size() - 1), values.get(values.size() - 1), r.getAssign());
    }
    for (int i = 0; i < pushes.size(); i++) {
      EmbeddingPushRequest r = pushes.get(i);
      if (r.getAssign()) {
        tables.assign(r.getTable(), ids.get(i), values.get(i), r.getStep());
      } else {
        tables.push(r.getTable(), r.getWorker(), ids.get(i), values.get(i), r.getStep());
      }
    }
    waiters.signal(); // a SYNC step applied, or an SSP clock moved: pulls may go on
    return UpdateReply.getDefaultInstance();
  }
}
