package io.sparkps.ps.bulk;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.charset.StandardCharsets;

/** Constants and blocking read/write helpers of the bulk protocol. */
final class BulkWire {
  static final int MAGIC = 0x53504b42; // "SPKB"
  /**
   * 2: a SYNC or SSP read waits on the shard within its request (in 1 a client awaited readability
   * over gRPC first), so a client and a shard of different versions refuse each other at the hello
   * and the client's reads go over gRPC, which waits either way.
   */
  static final int VERSION = 2;
  static final byte UPDATE = 1;
  static final byte READ = 2;
  /** A batch of embedding-table pulls: the header is an {@code EmbeddingPullBatch}, the reply's body its rows. */
  static final byte ROWS_PULL = 3;
  /** A batch of embedding-table pushes: the header is an {@code EmbeddingPushBatch}, the reply's body an {@code UpdateReply}. */
  static final byte ROWS_PUSH = 4;
  static final int MAX_HEADER_BYTES = 64 << 20;

  private BulkWire() {}

  /** A request that breaks the protocol: it is answered with INVALID_ARGUMENT, and its connection closed. */
  static final class Malformed extends IOException {
    Malformed(String message) {
      super(message);
    }
  }

  static void readFully(ByteChannel ch, ByteBuffer dst) throws IOException {
    while (dst.hasRemaining()) {
      if (ch.read(dst) < 0) {
        throw new EOFException("bulk connection closed by the peer");
      }
    }
  }

  /** Writes all of {@code srcs}, gathered into one write where the channel can (a socket, TLS records). */
  static void writeFully(ByteChannel ch, ByteBuffer... srcs) throws IOException {
    if (ch instanceof GatheringByteChannel gathering) {
      long left = 0;
      for (ByteBuffer b : srcs) {
        left += b.remaining();
      }
      while (left > 0) {
        left -= gathering.write(srcs);
      }
      return;
    }
    for (ByteBuffer b : srcs) {
      while (b.hasRemaining()) {
        ch.write(b);
      }
    }
  }

  static ByteBuffer read(ByteChannel ch, int n) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(n);
    readFully(ch, b);
    return b.flip();
  }

  static byte[] readBlock(ByteChannel ch) throws IOException {
    int length = read(ch, 4).getInt();
    if (length < 0 || length > MAX_HEADER_BYTES) {
      throw new Malformed("bulk header of " + length + " bytes is not within 0.." + MAX_HEADER_BYTES
          + " (field header_length)");
    }
    return read(ch, length).array();
  }

  /** A status byte, a length-prefixed body and a payload length. */
  static ByteBuffer head(int status, byte[] body, long payloadBytes) {
    return ByteBuffer.allocate(1 + 4 + body.length + 8).put((byte) status).putInt(body.length).put(body)
        .putLong(payloadBytes).flip();
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
