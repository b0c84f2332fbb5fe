package io.sparkps.ps.bulk;

import io.grpc.Status;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.WireEncoding;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.wire.StatusMapping;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ByteChannel;

/**
 * One authenticated connection of a {@link BulkServer}: reads its requests one at a time (updates
 * and reads, dense float32, bfloat16 or sparse, and batches of table rows), applies them through the shard's {@link ShardAccess}
 * and answers each, through one reusable transfer buffer. A malformed request is answered with
 * INVALID_ARGUMENT and ends the connection: the stream cannot be trusted past it. Runs on the
 * connection's own thread, which the server starts and ends by closing the channel.
 */
final class BulkConnection {
  private static final int CHUNK = 256 << 10;
  private final ByteChannel ch;
  private final ShardAccess access;
  private ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);

  BulkConnection(ByteChannel ch, ShardAccess access) {
    this.ch = ch;
    this.access = access;
  }

  /** Serves the next request; throws when the connection ends or the request is malformed. */
  void serveOne() throws IOException {
    byte kind = BulkWire.read(ch, 1).get();
    try {
      if (kind < BulkWire.UPDATE || kind > BulkWire.ROWS_PUSH) {
        throw new BulkWire.Malformed("unknown bulk request kind " + kind + " (field kind)");
      }
      byte[] header = BulkWire.readBlock(ch);
      long payloadBytes = BulkWire.read(ch, 8).getLong();
      if (kind >= BulkWire.ROWS_PULL && payloadBytes != 0) {
        throw new BulkWire.Malformed("a request of table rows carries them in its header, not " + payloadBytes
            + " bytes of payload (field payload_bytes)");
      }
      switch (kind) {
        case BulkWire.UPDATE -> update(parse(header, FrameHeader.parser()), payloadBytes);
        case BulkWire.READ -> read(parse(header, PullRequest.parser()));
        case BulkWire.ROWS_PULL -> {
          EmbeddingPullBatch batch = parse(header, EmbeddingPullBatch.parser());
          respond(() -> access.pullRows(batch).toByteArray());
        }
        default -> {
          EmbeddingPushBatch batch = parse(header, EmbeddingPushBatch.parser());
          respond(() -> access.pushRows(batch).toByteArray());
        }
      }
    } catch (BulkWire.Malformed e) {
      // The stream cannot be trusted past a malformed request: say why, then close it.
      BulkWire.writeFully(ch, BulkWire.head(Status.Code.INVALID_ARGUMENT.value(),
          BulkWire.utf8(e.getMessage()), 0));
      throw e;
    }
  }

  private <M> M parse(byte[] bytes, com.google.protobuf.Parser<M> parser) throws BulkWire.Malformed {
    try {
      return parser.parseFrom(bytes);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new BulkWire.Malformed("bulk request header does not parse: " + e.getMessage() + " (field header)");
    }
  }

  private void update(FrameHeader header, long payloadBytes) throws IOException {
    if (encoding(header.getEncoding()) == WireEncoding.SPARSE) {
      long most = 8L * access.maxUpdateValues();
      if (payloadBytes < 0 || payloadBytes > most) {
        throw new BulkWire.Malformed("sparse bulk payload of " + payloadBytes + " bytes is not within 0.." + most
            + ", what this shard holds as pairs (field payload_bytes)");
      }
      ensure(payloadBytes);
      buffer.clear().limit((int) payloadBytes);
      BulkWire.readFully(ch, buffer);
      buffer.flip();
      respond(() -> access.updateSparse(header, buffer).toByteArray());
      return;
    }
    boolean bf16 = encoding(header.getEncoding()) == WireEncoding.BF16;
    int width = bf16 ? 2 : 4;
    long most = (long) width * access.maxUpdateValues();
    if (payloadBytes < 0 || payloadBytes % width != 0 || payloadBytes > most) {
      // Checked before a buffer of that size is taken: an update carries at most what the shard holds.
      throw new BulkWire.Malformed("bulk payload of " + payloadBytes + " bytes is not a " + (bf16 ? "bfloat16"
          : "float32") + " array of at most " + most + " bytes, what this shard holds (field payload_bytes)");
    }
    respond(() -> access.update(header, (int) (payloadBytes / width), buffer.capacity() / 4, (dst, at, count) -> {
      buffer.clear().limit(count * width);
      BulkWire.readFully(ch, buffer);
      buffer.flip();
      if (bf16) {
        Bf16.decode(buffer, dst, at, count);
      } else {
        buffer.asFloatBuffer().get(dst, at, count);
      }
    }).toByteArray());
  }

  private WireEncoding encoding(WireEncoding e) throws BulkWire.Malformed {
    if (e == WireEncoding.UNRECOGNIZED) {
      throw new BulkWire.Malformed("unknown wire encoding: this shard takes FLOAT32, BF16 and SPARSE (field encoding)");
    }
    return e;
  }

  private void read(PullRequest request) throws IOException {
    if (encoding(request.getEncoding()) == WireEncoding.SPARSE) {
      readSparse(request);
      return;
    }
    boolean bf16 = encoding(request.getEncoding()) == WireEncoding.BF16;
    int width = bf16 ? 2 : 4;
    FrameHeader.Builder all = FrameHeader.newBuilder().setEncoding(request.getEncoding());
    long[] bytes = {0};
    byte[] failure = null;
    int code = 0;
    try {
      buffer.clear();
      access.read(request, (frame, parts) -> {
        all.addAllSegments(frame.getSegmentsList());
        for (FloatRange r : parts) {
          ensure(bytes[0] + (long) width * r.length());
          if (bf16) {
            buffer.position((int) bytes[0]);
            Bf16.encode(r.array(), r.offset(), r.length(), buffer);
          } else {
            buffer.asFloatBuffer().put((int) (bytes[0] / 4), r.array(), r.offset(), r.length());
          }
          bytes[0] += (long) width * r.length();
        }
      });
    } catch (RuntimeException e) {
      Status s = StatusMapping.toStatus(e);
      code = s.getCode().value();
      failure = BulkWire.utf8(String.valueOf(s.getDescription()));
    }
    if (failure != null) {
      BulkWire.writeFully(ch, BulkWire.head(code, failure, 0));
      return;
    }
    buffer.position(0).limit((int) bytes[0]);
    BulkWire.writeFully(ch, BulkWire.head(0, all.build().toByteArray(), bytes[0]), buffer);
  }

  private void readSparse(PullRequest request) throws IOException {
    FrameHeader.Builder all = FrameHeader.newBuilder().setEncoding(WireEncoding.SPARSE);
    long[] bytes = {0};
    try {
      buffer.clear();
      access.readSparse(request, new Reads.SparseSink() {
        @Override
        public void dense(Segment segment, FloatRange r) {
          all.addSegments(segment);
          ensure(bytes[0] + 4L * r.length());
          buffer.asFloatBuffer().put((int) (bytes[0] / 4), r.array(), r.offset(), r.length());
          bytes[0] += 4L * r.length();
        }

        @Override
        public void sparse(Segment segment, ByteBuffer pairs) {
          all.addSegments(segment);
          ensure(bytes[0] + pairs.remaining());
          buffer.put((int) bytes[0], pairs, pairs.position(), pairs.remaining());
          bytes[0] += pairs.remaining();
        }
      });
    } catch (RuntimeException e) {
      Status s = StatusMapping.toStatus(e);
      BulkWire.writeFully(ch, BulkWire.head(s.getCode().value(), BulkWire.utf8(String.valueOf(s.getDescription())), 0));
      return;
    }
    buffer.position(0).limit((int) bytes[0]);
    BulkWire.writeFully(ch, BulkWire.head(0, all.build().toByteArray(), bytes[0]), buffer);
  }

  /** Grows the transfer buffer, keeping its contents. */
  private void ensure(long capacity) {
    if (capacity > buffer.capacity()) {
      if (capacity > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("a bulk read of " + capacity + " bytes from one shard is too large: "
            + "pull fewer or smaller variables at once");
      }
      int size = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(capacity, 2L * buffer.capacity()));
      ByteBuffer bigger = ByteBuffer.allocateDirect(size)
          .order(ByteOrder.LITTLE_ENDIAN);
      buffer.position(0).limit(buffer.capacity());
      bigger.put(buffer).clear();
      buffer = bigger;
    }
  }

  private void respond(ReplySupplier body) throws IOException {
    byte[] reply;
    try {
      reply = body.get();
    } catch (RuntimeException e) {
      Status s = StatusMapping.toStatus(e);
      BulkWire.writeFully(ch, BulkWire.head(s.getCode().value(), BulkWire.utf8(String.valueOf(s.getDescription())), 0));
      return;
    }
    BulkWire.writeFully(ch, BulkWire.head(0, reply, 0));
  }

  private interface ReplySupplier {
    byte[] get() throws IOException;
  }
}
