package io.sparkps.ps.bulk;

import io.grpc.Status;
import io.sparkps.ps.PsToken;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.tls.PsTls;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Bulk transfers to one shard over pooled connections (one request at a time per connection).
 * Every request is bounded: a timer closes its connection when the deadline passes. Failures are
 * thrown as gRPC {@link io.grpc.StatusRuntimeException}s so the client maps them in one place.
 */
public final class BulkClient implements BulkChannel {
  /** Longest a connection and its handshakes may take (the server allows 5 s). */
  private static final long HANDSHAKE_MILLIS = 10_000;
  private final InetSocketAddress address;
  private final byte[] token;
  private final Duration timeout;
  private final ScheduledExecutorService timer;
  private final PsTls tls;
  private final Queue<ByteChannel> idle = new ConcurrentLinkedQueue<>();
  private volatile boolean closed;

  /**
   * A client of the bulk port at {@code host:port}, over TLS when {@code tls} is not null;
   * requests time out after {@code timeout}.
   */
  public BulkClient(String host, int port, PsToken token, PsTls tls, Duration timeout, ScheduledExecutorService timer) {
    this.address = new InetSocketAddress(host, port);
    this.tls = tls;
    this.token = token.secret().getBytes(StandardCharsets.US_ASCII);
    this.timeout = timeout;
    this.timer = timer;
  }

  /** Sends an update whose payload is {@code parts} (little-endian floats), written straight from them. */
  @Override
  public UpdateReply update(FrameHeader header, List<ByteBuffer> parts) {
    return call(ch -> {
      long bytes = 0;
      List<ByteBuffer> out = new ArrayList<>(parts.size() + 1);
      for (ByteBuffer p : parts) {
        bytes += p.remaining();
        out.add(p.duplicate());
      }
      out.add(0, request(BulkWire.UPDATE, header.toByteArray(), bytes));
      BulkWire.writeFully(ch, out.toArray(ByteBuffer[]::new));
      return UpdateReply.parseFrom(response(ch).body);
    });
  }

  /** Reads without waiting; each segment's bytes go straight into {@code target.apply(segment)}. */
  @Override
  public FrameHeader read(PullRequest request, Function<Segment, ByteBuffer> target) {
    return call(ch -> {
      BulkWire.writeFully(ch, request(BulkWire.READ, request.toByteArray(), 0));
      Response r = response(ch);
      FrameHeader header = FrameHeader.parseFrom(r.body);
      long expected = 0;
      for (Segment s : header.getSegmentsList()) {
        ByteBuffer dst = target.apply(s);
        expected += dst.remaining();
        BulkWire.readFully(ch, dst);
      }
      if (expected != r.payloadBytes) {
        throw new IOException("bulk read carried " + r.payloadBytes + " bytes but its segments describe " + expected);
      }
      return header;
    });
  }

  private static ByteBuffer request(byte kind, byte[] header, long payloadBytes) {
    return ByteBuffer.allocate(1 + 4 + header.length + 8).put(kind).putInt(header.length).put(header)
        .putLong(payloadBytes).flip();
  }

  private record Response(byte[] body, long payloadBytes) {}

  private static Response response(ByteChannel ch) throws IOException {
    int status = BulkWire.read(ch, 1).get() & 0xff;
    byte[] body = BulkWire.readBlock(ch);
    long payload = BulkWire.read(ch, 8).getLong();
    if (status != 0) {
      throw Status.fromCodeValue(status).withDescription(new String(body, StandardCharsets.UTF_8)).asRuntimeException();
    }
    return new Response(body, payload);
  }

  /** The cause of a failure before any request was sent: the connection or its handshake failed. */
  private static final class NotConnected extends IOException {
    NotConnected(Throwable cause) {
      super(cause);
    }
  }

  /**
   * Whether {@code e} failed before anything of its request was sent, for a reason another
   * transport may not share (the bulk port full, unreachable, or slow to handshake): the same
   * request may then go over gRPC.
   */
  public static boolean mayTakeAnotherPath(Throwable e) {
    if (!(e instanceof io.grpc.StatusRuntimeException s) || !(s.getCause() instanceof NotConnected)) {
      return false;
    }
    Status.Code code = s.getStatus().getCode();
    return code == Status.Code.UNAVAILABLE || code == Status.Code.RESOURCE_EXHAUSTED
        || code == Status.Code.DEADLINE_EXCEEDED;
  }

  private interface Exchange<T> {
    T run(ByteChannel ch) throws IOException;
  }

  private <T> T call(Exchange<T> exchange) {
    if (closed) {
      throw Status.CANCELLED.withDescription("the client is closed").asRuntimeException();
    }
    ByteChannel ch;
    try {
      ch = borrow();
    } catch (IOException e) {
      throw Status.UNAVAILABLE.withDescription("bulk port " + address + ": " + e)
          .withCause(new NotConnected(e)).asRuntimeException();
    } catch (io.grpc.StatusRuntimeException e) {
      throw e.getStatus().withCause(new NotConnected(e)).asRuntimeException();
    }
    ScheduledFuture<?> deadline = timer.schedule(() -> closeQuietly(ch), timeout.toMillis(), TimeUnit.MILLISECONDS);
    boolean reusable = false;
    try {
      T result = exchange.run(ch);
      reusable = true;
      return result;
    } catch (io.grpc.StatusRuntimeException e) {
      reusable = true;
      throw e;
    } catch (IOException e) {
      Status status = ch.isOpen() ? Status.UNAVAILABLE : Status.DEADLINE_EXCEEDED;
      throw status.withDescription("bulk transfer with " + address + (ch.isOpen() ? " failed: " + e
          : " took longer than " + timeout.toMillis() + " ms")).withCause(e).asRuntimeException();
    } finally {
      boolean inTime = deadline.cancel(false);
      if (reusable && inTime && ch.isOpen() && !closed) {
        idle.add(ch);
      } else {
        closeQuietly(ch);
      }
    }
  }

  private ByteChannel borrow() throws IOException {
    ByteChannel pooled = idle.poll();
    if (pooled != null) {
      return pooled;
    }
    SocketChannel socket = SocketChannel.open();
    ByteChannel ch = socket;
    long handshake = Math.min(timeout.toMillis(), HANDSHAKE_MILLIS);
    ScheduledFuture<?> deadline = timer.schedule(() -> closeQuietly(socket), handshake, TimeUnit.MILLISECONDS);
    try {
      socket.socket().connect(address, (int) handshake);
      socket.socket().setTcpNoDelay(true);
      socket.socket().setKeepAlive(true);
      if (tls != null) {
        ch = tls.connectBulk(socket);
      }
      BulkWire.writeFully(ch, ByteBuffer.allocate(12 + token.length).putInt(BulkWire.MAGIC)
          .putInt(BulkWire.VERSION).putInt(token.length).put(token).flip());
      int status = BulkWire.read(ch, 1).get() & 0xff;
      if (status != 0) {
        byte[] message = BulkWire.readBlock(ch);
        BulkWire.read(ch, 8);
        throw Status.fromCodeValue(status).withDescription(new String(message, StandardCharsets.UTF_8)).asRuntimeException();
      }
      if (!deadline.cancel(false)) {
        throw new IOException("the bulk handshake took longer than " + handshake + " ms");
      }
      return ch;
    } catch (IOException | RuntimeException e) {
      deadline.cancel(false);
      closeQuietly(ch);
      throw e;
    }
  }

  private static void closeQuietly(java.nio.channels.Channel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      // nothing left to release
    }
  }

  @Override
  public String transport() {
    return tls == null ? "tcp" : "tls";
  }

  /** Closes every pooled connection; idempotent. */
  @Override
  public void close() {
    closed = true;
    for (ByteChannel ch = idle.poll(); ch != null; ch = idle.poll()) {
      closeQuietly(ch);
    }
  }
}
