package io.sparkps.ps.bulk;

import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.server.FiniteCheck;
import io.sparkps.ps.server.FloatPool;
import io.sparkps.ps.server.Payload;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.Updates;
import java.io.IOException;
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
  private final FloatPool pool;
  private volatile boolean closed;

  ShardAccess(Updates updates, Reads reads, FloatPool pool) {
    this.updates = updates;
    this.reads = reads;
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

  /** The most values one update may carry: what the shard holds (a dense update of all of it). */
  long maxUpdateValues() {
    return Math.min(Integer.MAX_VALUE - 8, updates.shardElements());
  }

  /** Validates a read and hands its frames to {@code sink} (called with the slices locked). */
  void read(PullRequest request, Reads.FrameSink sink) {
    reads.validate(request);
    reads.read(request, sink);
  }

  /** Whether the shard stopped serving. */
  boolean isClosed() {
    return closed;
  }

  void close() {
    closed = true;
  }
}
