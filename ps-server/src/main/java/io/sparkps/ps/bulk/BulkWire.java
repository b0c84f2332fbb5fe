package io.sparkps.ps.bulk;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/** Constants and blocking read/write helpers of the bulk protocol. */
final class BulkWire {
  static final int MAGIC = 0x53504b42; // "SPKB"
  static final int VERSION = 1;
  static final byte UPDATE = 1;
  static final byte READ = 2;
  static final int MAX_HEADER_BYTES = 64 << 20;

  private BulkWire() {}

  static void readFully(SocketChannel ch, ByteBuffer dst) throws IOException {
    while (dst.hasRemaining()) {
      if (ch.read(dst) < 0) {
        throw new EOFException("bulk connection closed by the peer");
      }
    }
  }

  static void writeFully(SocketChannel ch, ByteBuffer... srcs) throws IOException {
    long left = 0;
    for (ByteBuffer b : srcs) {
      left += b.remaining();
    }
    while (left > 0) {
      left -= ch.write(srcs);
    }
  }

  static ByteBuffer read(SocketChannel ch, int n) throws IOException {
    ByteBuffer b = ByteBuffer.allocate(n);
    readFully(ch, b);
    return b.flip();
  }

  static byte[] readBlock(SocketChannel ch) throws IOException {
    int length = read(ch, 4).getInt();
    if (length < 0 || length > MAX_HEADER_BYTES) {
      throw new IOException("bulk block of " + length + " bytes is out of range");
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
