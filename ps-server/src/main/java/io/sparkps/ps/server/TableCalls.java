package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPullRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPushRequest;
import io.sparkps.ps.grpc.proto.EmbeddingRows;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PackedArrays;
import io.sparkps.ps.wire.PsError;
import java.util.ArrayList;
import java.util.List;

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
  private final BlockingWaits waits;

  /**
   * The calls of {@code tables} of the shard called {@code name} ("ps 0"), whose waits
   * {@code waiters} holds, each at most {@code maxWaitMs}.
   */
  public TableCalls(EmbeddingTables tables, Waiters waiters, long maxWaitMs, String name) {
    this.tables = tables;
    this.waiters = waiters;
    this.waits = new BlockingWaits(waiters, maxWaitMs, name);
    tables.onStepApplied(waiters::signalLater); // a pull caught a restored SYNC table up: others may go on
  }

  /** The shard's reads that wait on their callers' threads: table pulls here, dense reads over the bulk port. */
  public BlockingWaits waits() {
    return waits;
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
    return waits.bound(batch.getTablesList().stream().mapToLong(EmbeddingPullRequest::getTimeoutMs).max().orElse(0));
  }

  /**
   * The rows of {@code batch}, waiting on the calling thread (see {@link BlockingWaits}) until no
   * table of it is blocked, at most {@link #waitBound}; then a {@link PsError} of kind TIMEOUT
   * naming the shard and what it waited for.
   */
  public EmbeddingRowsBatch rowsWhenReadable(EmbeddingPullBatch batch) {
    waits.await(() -> blocker(batch), waitBound(batch), "embedding rows");
    return rows(batch);
  }

  /** Fails the reads waiting on their callers' threads, and any that would wait later: the shard is stopping. */
  public void close() {
    waits.close();
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
