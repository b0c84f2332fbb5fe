package io.sparkps.ps.tls;

import io.grpc.netty.shaded.io.netty.util.ReferenceCountUtil;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;

/**
 * A blocking socket channel with TLS on it: what is written is encrypted into records, what is
 * read is decrypted from them. One reader and one writer at a time (the bulk protocol's
 * request/response turns); closing it closes the socket, which ends a blocked read.
 */
final class TlsChannel implements ByteChannel, GatheringByteChannel {
  private static final ByteBuffer[] NOTHING = {ByteBuffer.allocate(0)};
  private final SocketChannel ch;
  private final SSLEngine engine;
  private static final int OVERFLOW = -2;
  private ByteBuffer netIn;
  private ByteBuffer netOut;
  private ByteBuffer appIn;
  private boolean inboundDone;
  private final java.util.concurrent.atomic.AtomicBoolean released = new java.util.concurrent.atomic.AtomicBoolean();

  private TlsChannel(SocketChannel ch, SSLEngine engine) {
    this.ch = ch;
    this.engine = engine;
    int packet = engine.getSession().getPacketBufferSize();
    netIn = ByteBuffer.allocateDirect(packet).flip();
    netOut = ByteBuffer.allocateDirect(packet).flip();
    appIn = ByteBuffer.allocateDirect(engine.getSession().getApplicationBufferSize()).flip();
  }

  /** Runs the handshake of {@code engine} over {@code ch}; on failure the engine is released and the socket closed. */
  static TlsChannel handshake(SocketChannel ch, SSLEngine engine) throws IOException {
    TlsChannel tls = new TlsChannel(ch, engine);
    try {
      engine.beginHandshake();
      tls.handshake();
      return tls;
    } catch (IOException | RuntimeException e) {
      tls.close();
      throw e;
    }
  }

  private void handshake() throws IOException {
    while (true) {
      switch (engine.getHandshakeStatus()) {
        case NEED_WRAP -> wrap(NOTHING);
        case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
          if (fillAppIn() < 0) {
            throw new EOFException("the peer closed the connection during the TLS handshake");
          }
        }
        case NEED_TASK -> runTasks();
        default -> {
          return;
        }
      }
    }
  }

  private void runTasks() {
    for (Runnable task = engine.getDelegatedTask(); task != null; task = engine.getDelegatedTask()) {
      task.run();
    }
  }

  /** Encrypts from {@code srcs} (possibly nothing, during the handshake) and sends the record. */
  private long wrap(ByteBuffer[] srcs) throws IOException {
    netOut.clear();
    SSLEngineResult r = engine.wrap(srcs, netOut);
    while (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
      netOut = grow(netOut.flip(), engine.getSession().getPacketBufferSize()).clear();
      r = engine.wrap(srcs, netOut);
    }
    netOut.flip();
    while (netOut.hasRemaining()) {
      ch.write(netOut);
    }
    if (r.bytesConsumed() == 0 && r.bytesProduced() == 0 && hasRemaining(srcs)) {
      throw new IOException("the TLS connection is closed (" + r.getStatus() + ", " + r.getHandshakeStatus() + ")");
    }
    if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
      runTasks();
    }
    return r.bytesConsumed();
  }

  /** A direct buffer of at least {@code atLeast} bytes (twice the old one's) holding {@code old}'s remaining bytes. */
  private static ByteBuffer grow(ByteBuffer old, int atLeast) {
    ByteBuffer bigger = ByteBuffer.allocateDirect(Math.max(atLeast, 2 * old.capacity()));
    return bigger.put(old).flip();
  }

  /** Decrypts into {@code appIn} (grown when a record needs more room); -1 at the end of the stream. */
  private int fillAppIn() throws IOException {
    appIn.compact();
    try {
      int n = unwrap(appIn);
      while (n == OVERFLOW) {
        appIn = grow(appIn.flip(), engine.getSession().getApplicationBufferSize()).compact();
        n = unwrap(appIn);
      }
      return n;
    } finally {
      appIn.flip();
    }
  }

  /**
   * Decrypts at least one record into {@code dst} (or only handshake data), reading from the
   * socket as needed; -1 at the end of the stream, {@link #OVERFLOW} when {@code dst} lacks room.
   */
  private int unwrap(ByteBuffer dst) throws IOException {
    while (true) {
      SSLEngineResult r = engine.unwrap(netIn, dst);
      switch (r.getStatus()) {
        case OK -> {
          if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
            runTasks();
          }
          if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
            wrap(NOTHING); // a post-handshake message (key update) wants an answer
          }
          if (r.bytesProduced() > 0 || r.bytesConsumed() > 0) {
            return r.bytesProduced();
          }
        }
        case BUFFER_UNDERFLOW -> {
          if (netIn.position() == 0 && netIn.limit() == netIn.capacity()) {
            netIn = grow(netIn, engine.getSession().getPacketBufferSize()); // a record larger than the buffer
          }
          netIn.compact();
          int n;
          try {
            n = ch.read(netIn);
          } finally {
            netIn.flip();
          }
          if (n < 0) {
            return -1;
          }
        }
        case BUFFER_OVERFLOW -> {
          return OVERFLOW;
        }
        case CLOSED -> {
          inboundDone = true;
          return -1;
        }
        default -> throw new SSLException("unexpected TLS state " + r);
      }
    }
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    while (!appIn.hasRemaining()) {
      if (inboundDone) {
        return -1;
      }
      if (dst.remaining() >= appIn.capacity()) {
        int n = unwrap(dst); // straight into the caller's buffer
        if (n != OVERFLOW) {
          if (n != 0) {
            return n;
          }
          continue;
        }
      }
      if (fillAppIn() < 0) {
        return -1;
      }
    }
    int n = Math.min(dst.remaining(), appIn.remaining());
    ByteBuffer slice = appIn.slice(appIn.position(), n);
    dst.put(slice);
    appIn.position(appIn.position() + n);
    return n;
  }

  @Override
  public int write(ByteBuffer src) throws IOException {
    return (int) write(new ByteBuffer[] {src});
  }

  @Override
  public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
    ByteBuffer[] part = new ByteBuffer[length];
    System.arraycopy(srcs, offset, part, 0, length);
    return write(part);
  }

  @Override
  public long write(ByteBuffer[] srcs) throws IOException {
    long written = 0;
    while (hasRemaining(srcs)) {
      written += wrap(srcs);
    }
    return written;
  }

  private static boolean hasRemaining(ByteBuffer[] srcs) {
    for (ByteBuffer b : srcs) {
      if (b.hasRemaining()) {
        return true;
      }
    }
    return false;
  }

  @Override
  public boolean isOpen() {
    return ch.isOpen();
  }

  /** Closes the socket (no close_notify: the bulk protocol frames its own ends) and frees the engine. */
  @Override
  public void close() throws IOException {
    try {
      ch.close();
    } finally {
      if (released.compareAndSet(false, true)) {
        ReferenceCountUtil.release(engine); // OpenSSL's engine frees its native state (it locks out concurrent use)
      }
    }
  }
}
