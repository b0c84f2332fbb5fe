package io.sparkps.ps.bulk;

import io.grpc.Status;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.grpc.proto.WireEncoding;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.SparseValues;
import io.sparkps.ps.wire.StatusMapping;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * The bulk data plane to a shard in this JVM: the same decoding, checks, locks and update as over
 * the bulk port, with the bytes copied once between ND4J's buffers and the shard's arrays instead
 * of through a loopback socket (in local Spark, and when a worker and a ps task share an
 * executor). Found through the id in the shard's hello reply and the run's token.
 */
@Internal
public final class LocalBulk implements BulkChannel {
  private static final int CHUNK_FLOATS = 64 << 10;
  private final ShardAccess shard;
  private final String name;

  private LocalBulk(ShardAccess shard, String name) {
    this.shard = shard;
    this.name = name;
  }

  /** The channel to the shard {@code localId} of this JVM, if it is here and takes {@code token}. */
  public static Optional<BulkChannel> find(String localId, PsToken token, String name) {
    return LocalShards.find(localId, token.secret().getBytes(StandardCharsets.US_ASCII))
        .map(access -> new LocalBulk(access, name));
  }

  @Override
  public UpdateReply update(FrameHeader header, List<ByteBuffer> parts) {
    checkServing();
    if (header.getEncoding() == WireEncoding.SPARSE) {
      try {
        return shard.updateSparse(header, joined(parts));
      } catch (RuntimeException e) {
        throw StatusMapping.toStatus(e).asRuntimeException();
      }
    }
    long bytes = 0;
    FloatBuffer[] sources = new FloatBuffer[parts.size()];
    for (int i = 0; i < sources.length; i++) {
      bytes += parts.get(i).remaining();
      sources[i] = parts.get(i).duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    }
    if (bytes % 4 != 0 || bytes / 4 > Integer.MAX_VALUE - 8) {
      throw Status.INVALID_ARGUMENT.withDescription("an update of " + bytes + " bytes is not one float32 array "
          + "of at most 2^31 elements").asRuntimeException();
    }
    int[] part = {0};
    try {
      return shard.update(header, (int) (bytes / 4), CHUNK_FLOATS, (dst, at, count) -> {
        for (int done = 0; done < count; ) {
          FloatBuffer src = sources[part[0]];
          int take = Math.min(count - done, src.remaining());
          src.get(dst, at + done, take);
          done += take;
          if (!src.hasRemaining()) {
            part[0]++;
          }
        }
      });
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription(name + ": " + e.getMessage()).withCause(e).asRuntimeException();
    } catch (RuntimeException e) {
      throw StatusMapping.toStatus(e).asRuntimeException();
    }
  }

  /** {@code parts} as one buffer: itself when there is one. */
  private static ByteBuffer joined(List<ByteBuffer> parts) {
    if (parts.size() == 1) {
      return parts.get(0).duplicate();
    }
    ByteBuffer all = ByteBuffer.allocate(parts.stream().mapToInt(ByteBuffer::remaining).sum());
    parts.forEach(p -> all.put(p.duplicate()));
    return all.flip();
  }

  /** A sparse read: dense slices copied, sparse ones scattered into the values the target already holds. */
  private FrameHeader readSparse(PullRequest request, Function<Segment, ByteBuffer> target) {
    FrameHeader.Builder all = FrameHeader.newBuilder().setEncoding(WireEncoding.SPARSE);
    try {
      shard.readSparse(request, new Reads.SparseSink() {
        @Override
        public void dense(Segment segment, FloatRange r) {
          all.addSegments(segment);
          target.apply(segment).duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
              .put(r.array(), r.offset(), r.length());
        }

        @Override
        public void sparse(Segment segment, ByteBuffer pairs) {
          all.addSegments(segment);
          SparseValues.scatter(pairs.duplicate(), (int) segment.getNonzeros(), target.apply(segment),
              "variable '" + segment.getName() + "'");
        }
      });
    } catch (RuntimeException e) {
      throw StatusMapping.toStatus(e).asRuntimeException();
    }
    return all.build();
  }

  @Override
  public FrameHeader read(PullRequest request, Function<Segment, ByteBuffer> target) {
    checkServing();
    if (request.getEncoding() == WireEncoding.SPARSE) {
      return readSparse(request, target);
    }
    FrameHeader.Builder all = FrameHeader.newBuilder();
    try {
      shard.read(request, (frame, parts) -> {
        all.addAllSegments(frame.getSegmentsList());
        int part = 0;
        int used = 0;
        for (Segment seg : frame.getSegmentsList()) {
          ByteBuffer dst = target.apply(seg);
          if (dst.remaining() != 4L * seg.getCount()) {
            throw new IllegalStateException("a read segment of " + seg.getCount() + " floats met a destination of "
                + dst.remaining() + " bytes");
          }
          FloatBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
          while (out.hasRemaining()) {
            FloatRange r = parts.get(part);
            int take = Math.min(out.remaining(), r.length() - used);
            out.put(r.array(), r.offset() + used, take);
            used += take;
            if (used == r.length()) {
              part++;
              used = 0;
            }
          }
        }
      });
    } catch (RuntimeException e) {
      throw StatusMapping.toStatus(e).asRuntimeException();
    }
    return all.build();
  }

  @Override
  public EmbeddingRowsBatch pullRows(EmbeddingPullBatch batch) {
    return served(() -> shard.pullRows(batch));
  }

  @Override
  public UpdateReply pushRows(EmbeddingPushBatch batch) {
    return served(() -> shard.pushRows(batch));
  }

  /** {@code call}'s answer while the shard serves; its failure as the status the bulk port would send. */
  private <T> T served(java.util.function.Supplier<T> call) {
    checkServing();
    try {
      return call.get();
    } catch (RuntimeException e) {
      throw StatusMapping.toStatus(e).asRuntimeException();
    }
  }

  private void checkServing() {
    if (shard.isClosed()) {
      throw Status.UNAVAILABLE.withDescription(name + " stopped serving").asRuntimeException();
    }
  }

  @Override
  public String transport() {
    return "same-jvm";
  }

  @Override
  public void close() {
    // nothing to release: the shard's arrays belong to the shard
  }
}
