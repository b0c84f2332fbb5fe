package io.sparkps.ps.bulk;

import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.annotation.Internal;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.function.Function;

/**
 * A client's bulk data plane to one shard: over the shard's bulk port ({@link BulkClient}), or
 * through memory when the shard runs in the client's own JVM ({@link LocalBulk}). Failures are
 * thrown as gRPC {@link io.grpc.StatusRuntimeException}s either way.
 */
@Internal
public interface BulkChannel extends AutoCloseable {
  /** Sends an update whose payload is {@code parts} (little-endian floats). */
  UpdateReply update(FrameHeader header, List<ByteBuffer> parts);

  /**
   * Reads once the shard may serve the read (a SYNC or SSP read waits there for other workers, at
   * most the request's {@code timeout_ms}; 0: it may not wait); each segment's floats go into
   * {@code target.apply(segment)}.
   */
  FrameHeader read(PullRequest request, Function<Segment, ByteBuffer> target);

  /**
   * The rows of a batch of table pulls; a training pull of a SYNC or SSP table waits on the shard
   * (at most the batch's wait) until the other workers' step is applied.
   */
  EmbeddingRowsBatch pullRows(EmbeddingPullBatch batch);

  /** Applies a batch of table pushes (gradients, or a refill's rows). */
  UpdateReply pushRows(EmbeddingPushBatch batch);

  /** How the bytes travel, for diagnostics: {@code "tcp"}, {@code "tls"} or {@code "same-jvm"}. */
  String transport();

  /** Releases the channel's connections; idempotent. */
  @Override
  void close();
}
