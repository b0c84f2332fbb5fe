package io.sparkps.ps.bulk;

import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.wire.FiniteCheck;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.wire.Payload;
import io.sparkps.ps.wire.PsError;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.wire.SparseValues;
import io.sparkps.ps.server.Updates;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * What the bulk data plane does with one shard, whichever way the bytes come: an update is
 * decoded chunk by chunk into a pooled array (checked for NaN and infinity while each chunk is in
 * cache) and then applied; a read hands the values to a sink under the slices' locks.
 */
final class ShardAccess {
  /** Fills {@code dst[at .. at+count)} with the next floats of an update's payload. */
  interface FloatSource {
    void next(float[] dst, int at, int count) throws IOException;
  }

  private final Updates updates;
  private final Reads reads;
  private final TableCalls tables;
  private final FloatPool pool;
  private final java.util.concurrent.atomic.LongAdder rowPulls = new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder rowPushes = new java.util.concurrent.atomic.LongAdder();
  private volatile boolean closed;

  ShardAccess(Updates updates, Reads reads, TableCalls tables, FloatPool pool) {
    this.updates = updates;
    this.reads = reads;
    this.tables = tables;
    this.pool = pool;
  }

  /**
   * Decodes {@code count} floats from {@code source} in chunks of {@code chunkFloats}, then
   * applies the update. A refused update (a {@code PsError}) is thrown after the whole payload
   * was consumed, so a stream stays usable.
   */
  UpdateReply update(FrameHeader header, int count, int chunkFloats, FloatSource source) throws IOException {
    float[] data = pool.take(count);
    try {
      int firstBad = -1;
      for (int done = 0; done < count; ) {
        int k = Math.min(count - done, chunkFloats);
        source.next(data, done, k);
        if (firstBad < 0) {
          int bad = FiniteCheck.firstNonFinite(data, done, k);
          firstBad = bad < 0 ? -1 : done + bad;
        }
        done += k;
      }
      return updates.apply(List.of(new Payload(header, data, count, firstBad)));
    } finally {
      pool.give(data);
    }
  }

  /**
   * Applies a {@code SPARSE} update whose whole payload is {@code payload}: each segment with
   * {@code nonzeros} is scattered into zeros, the others copied, and the dense result applied as
   * any update (so every update rule and consistency mode takes it unchanged).
   */
  UpdateReply updateSparse(FrameHeader header, ByteBuffer payload) {
    long dense = 0;
    long bytes = 0;
    for (Segment seg : header.getSegmentsList()) {
      if (seg.getCount() < 0 || (seg.hasNonzeros() && (seg.getNonzeros() < 0 || seg.getNonzeros() > seg.getCount()))) {
        throw PsError.invalid("sparse segment of '" + seg.getName() + "' has " + seg.getNonzeros() + " nonzeros of "
            + seg.getCount() + " elements (fields nonzeros, count)");
      }
      dense += seg.getCount();
      bytes += seg.hasNonzeros() ? 8 * seg.getNonzeros() : 4 * seg.getCount();
    }
    if (dense > maxUpdateValues() || bytes != payload.remaining()) {
      throw PsError.invalid("sparse update of " + dense + " elements in " + payload.remaining() + " bytes: its segments "
          + "describe " + bytes + " bytes, and a shard takes at most " + maxUpdateValues() + " elements (fields count, "
          + "nonzeros)");
    }
    float[] data = pool.take((int) dense);
    try {
      ByteBuffer in = payload.duplicate().order(ByteOrder.LITTLE_ENDIAN);
      int at = 0;
      for (Segment seg : header.getSegmentsList()) {
        int n = (int) seg.getCount();
        if (seg.hasNonzeros()) {
          Arrays.fill(data, at, at + n, 0f);
          SparseValues.scatter(in, (int) seg.getNonzeros(), n, data, at, "variable '" + seg.getName() + "'");
        } else {
          in.asFloatBuffer().get(data, at, n);
          in.position(in.position() + 4 * n);
        }
        at += n;
      }
      int bad = FiniteCheck.firstNonFinite(data, 0, at);
      return updates.apply(List.of(new Payload(header, data, at, bad)));
    } finally {
      pool.give(data);
    }
  }

  /** The most values one update may carry: what the shard holds (a dense update of all of it). */
  long maxUpdateValues() {
    return Math.min(Integer.MAX_VALUE - 8, updates.shardElements());
  }

  /** Validates a sparse read, waits until it may be served, and hands its segments to {@code sink} (called with the slices locked). */
  void readSparse(PullRequest request, Reads.SparseSink sink) {
    reads.validate(request);
    awaitReadable(request);
    reads.readSparse(request, sink);
  }

  /** Validates a read, waits until it may be served, and hands its frames to {@code sink} (called with the slices locked). */
  void read(PullRequest request, Reads.FrameSink sink) {
    reads.validate(request);
    awaitReadable(request);
    reads.read(request, sink);
  }

  /**
   * Waits on this thread until a SYNC or SSP read no longer waits for other workers, at most the
   * request's wait: one request where a gRPC call to wait and then a read took two.
   */
  private void awaitReadable(PullRequest request) {
    tables.waits().await(() -> reads.blocker(request), request.getTimeoutMs(), "a read of variables");
  }

  /**
   * The rows of a batch of table pulls, once none of its SYNC or SSP tables waits for other
   * workers: waiting on the calling thread, at most the longest wait the batch asks for (within the
   * shard's maximum).
   */
  EmbeddingRowsBatch pullRows(EmbeddingPullBatch batch) {
    rowPulls.increment();
    return tables.rowsWhenReadable(batch);
  }

  /** Applies a batch of table pushes (gradients, or a refill's rows) and wakes the pulls waiting for them. */
  UpdateReply pushRows(EmbeddingPushBatch batch) {
    rowPushes.increment();
    return tables.push(batch.getTablesList());
  }

  /** Batches of table rows pulled and pushed through the bulk data plane so far (port and memory). */
  long[] rowCalls() {
    return new long[] {rowPulls.sum(), rowPushes.sum()};
  }

  /** Whether the shard stopped serving. */
  boolean isClosed() {
    return closed;
  }

  void close() {
    closed = true;
    tables.close(); // the pulls waiting on connections' threads end now, not at their timeouts
  }
}
