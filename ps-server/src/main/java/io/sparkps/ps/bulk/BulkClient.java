package io.sparkps.ps.bulk;

import io.grpc.Status;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPullRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.grpc.proto.WireEncoding;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.SparseValues;
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
@Internal
public final class BulkClient implements BulkChannel {
  /**
   * For benchmarks on one machine: a system property giving the gigabits per second of a simulated
   * network link in front of each shard ({@link SimulatedLink}); unset, transfers are not paced.
   */
  public static final String SIMULATED_LINK_PROPERTY = SimulatedLink.PROPERTY;
  /** Longest a connection and its handshakes may take (the server allows 5 s). */
  private static final long HANDSHAKE_MILLIS = 10_000;
  private final InetSocketAddress address;
  private final byte[] token;
  private final Duration timeout;
  private final ScheduledExecutorService timer;
  private final PsTls tls;
  private final Queue<ByteChannel> idle = new ConcurrentLinkedQueue<>();
  /** Connections carrying a request now: closed with the client, which fails their requests at once. */
  private final java.util.Set<ByteChannel> busy = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final boolean bf16;
  private final java.util.concurrent.atomic.AtomicLong wireBytes = new java.util.concurrent.atomic.AtomicLong();
  /** Each transfer thread's buffer for bfloat16 payloads (grown as needed). */
  private static final ThreadLocal<ByteBuffer[]> SCRATCH = ThreadLocal.withInitial(() -> new ByteBuffer[1]);
  private volatile boolean closed;

  /**
   * A client of the bulk port at {@code host:port}, over TLS when {@code tls} is not null;
   * requests time out after {@code timeout}.
   */
  public BulkClient(String host, int port, PsToken token, PsTls tls, Duration timeout, ScheduledExecutorService timer) {
    this(host, port, token, tls, timeout, timer, false);
  }

  /**
   * As above; with {@code bf16}, gradients and values travel as bfloat16 (half the bytes, see
   * {@link Bf16}), converted from and to float32 at both ends.
   */
  public BulkClient(String host, int port, PsToken token, PsTls tls, Duration timeout, ScheduledExecutorService timer,
      boolean bf16) {
    this.bf16 = bf16;
    this.address = new InetSocketAddress(host, port);
    this.tls = tls;
    this.token = token.secret().getBytes(StandardCharsets.US_ASCII);
    this.timeout = timeout;
    this.timer = timer;
  }

  /**
   * Sends an update whose payload is {@code parts} (little-endian floats), written straight from
   * them, or encoded to bfloat16 first.
   */
  @Override
  public UpdateReply update(FrameHeader header, List<ByteBuffer> parts) {
    return call(ch -> {
      long bytes = 0;
      List<ByteBuffer> out = new ArrayList<>(parts.size() + 1);
      FrameHeader sent = header;
      if (bf16 && header.getEncoding() != WireEncoding.SPARSE) {
        long floats = 0;
        for (ByteBuffer p : parts) {
          floats += p.remaining() / 4;
        }
        ByteBuffer encoded = scratch(2 * floats);
        for (ByteBuffer p : parts) {
          Bf16.encode(p.duplicate(), encoded);
        }
        out.add(encoded.flip());
        bytes = encoded.remaining();
        sent = header.toBuilder().setEncoding(WireEncoding.BF16).build();
      } else {
        for (ByteBuffer p : parts) {
          bytes += p.remaining();
          out.add(p.duplicate());
        }
      }
      byte[] head = sent.toByteArray();
      out.add(0, request(BulkWire.UPDATE, head, bytes));
      BulkWire.writeFully(ch, out.toArray(ByteBuffer[]::new));
      Response r = response(ch);
      wireBytes.addAndGet(13 + head.length + bytes + 13 + r.body.length);
      return UpdateReply.parseFrom(r.body);
    });
  }

  /**
   * Reads once the shard serves the read (a SYNC or SSP read waits there for other workers, at most
   * the request's wait, which the connection's deadline adds to the client's timeout); each
   * segment's bytes go straight into {@code target.apply(segment)} (via bfloat16 when set).
   */
  @Override
  public FrameHeader read(PullRequest request, Function<Segment, ByteBuffer> target) {
    boolean sparse = request.getEncoding() == WireEncoding.SPARSE;
    PullRequest sent = bf16 && !sparse ? request.toBuilder().setEncoding(WireEncoding.BF16).build() : request;
    return call(timeout.plusMillis(Math.max(0, request.getTimeoutMs())), ch -> {
      byte[] head = sent.toByteArray();
      BulkWire.writeFully(ch, request(BulkWire.READ, head, 0));
      Response r = response(ch);
      FrameHeader header = FrameHeader.parseFrom(r.body);
      if (header.getEncoding() != sent.getEncoding()) {
        throw new IOException("asked the bulk port for " + sent.getEncoding() + " values but it sent "
            + header.getEncoding() + ": a shard of another SparkPS version?");
      }
      long expected = 0;
      for (Segment s : header.getSegmentsList()) {
        ByteBuffer dst = target.apply(s);
        if (s.hasNonzeros()) {
          if (s.getNonzeros() < 0 || s.getNonzeros() > dst.remaining() / 4) {
            throw new IOException("sparse segment of '" + s.getName() + "' claims " + s.getNonzeros() + " pairs");
          }
          ByteBuffer pairs = scratch(8 * s.getNonzeros());
          pairs.limit((int) (8 * s.getNonzeros()));
          expected += pairs.remaining();
          BulkWire.readFully(ch, pairs);
          SparseValues.scatter(pairs.flip(), (int) s.getNonzeros(), dst, "variable '" + s.getName() + "'");
        } else if (bf16 && !sparse) {
          ByteBuffer encoded = scratch(dst.remaining() / 2);
          encoded.limit(dst.remaining() / 2);
          expected += encoded.remaining();
          BulkWire.readFully(ch, encoded);
          Bf16.decode(encoded.flip(), dst);
        } else {
          expected += dst.remaining();
          BulkWire.readFully(ch, dst);
        }
      }
      if (expected != r.payloadBytes) {
        throw new IOException("bulk read carried " + r.payloadBytes + " bytes but its segments describe " + expected);
      }
      wireBytes.addAndGet(13 + head.length + 13 + r.body.length + r.payloadBytes);
      return header;
    });
  }

  /**
   * The rows of a batch of table pulls; the connection's deadline is the client's timeout plus the
   * longest wait the batch asks for, as a SYNC pull may wait on the shard that long.
   */
  @Override
  public EmbeddingRowsBatch pullRows(EmbeddingPullBatch batch) {
    long wait = batch.getTablesList().stream().mapToLong(EmbeddingPullRequest::getTimeoutMs).max().orElse(0);
    return call(timeout.plusMillis(wait), ch -> EmbeddingRowsBatch.parseFrom(exchangeHeader(ch, BulkWire.ROWS_PULL,
        batch.toByteArray())));
  }

  @Override
  public UpdateReply pushRows(EmbeddingPushBatch batch) {
    return call(timeout, ch -> UpdateReply.parseFrom(exchangeHeader(ch, BulkWire.ROWS_PUSH, batch.toByteArray())));
  }

  /** Sends a request whose header is all of it and returns the reply's body. */
  private byte[] exchangeHeader(ByteChannel ch, byte kind, byte[] head) throws IOException {
    BulkWire.writeFully(ch, request(kind, head, 0));
    Response r = response(ch);
    wireBytes.addAndGet(13 + head.length + 13 + r.body.length);
    return r.body;
  }

  /** Bytes this client sent and received on the bulk port so far: payloads and request and reply heads. */
  public long wireBytes() {
    return wireBytes.get();
  }

  /** The calling thread's scratch buffer with room for {@code bytes}, cleared. */
  private static ByteBuffer scratch(long bytes) {
    ByteBuffer[] held = SCRATCH.get();
    if (held[0] == null || held[0].capacity() < bytes) {
      if (bytes > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("a bfloat16 transfer of " + bytes + " bytes to one shard is too large: "
            + "split the variable over more shards");
      }
      held[0] = ByteBuffer.allocateDirect((int) Math.max(bytes, 1 << 16)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    }
    return held[0].clear();
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
    return call(timeout, exchange);
  }

  private <T> T call(Duration deadlineAfter, Exchange<T> exchange) {
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
    busy.add(ch);
    if (closed) {
      closeQuietly(ch); // closed while this request borrowed it: it fails below as any closed connection
    }
    ScheduledFuture<?> deadline = timer.schedule(() -> closeQuietly(ch), deadlineAfter.toMillis(), TimeUnit.MILLISECONDS);
    boolean reusable = false;
    try {
      T result = exchange.run(ch);
      reusable = true;
      return result;
    } catch (io.grpc.StatusRuntimeException e) {
      reusable = true;
      throw e;
    } catch (IOException e) {
      if (closed) { // as gRPC fails the calls of a channel shut down
        throw Status.UNAVAILABLE.withDescription("bulk transfer with " + address + " ended: the client closed its "
            + "connections (the shard was dropped as lost, or the client is closing)").withCause(e).asRuntimeException();
      }
      Status status = ch.isOpen() ? Status.UNAVAILABLE : Status.DEADLINE_EXCEEDED;
      throw status.withDescription("bulk transfer with " + address + (ch.isOpen() ? " failed: " + e
          : " took longer than " + deadlineAfter.toMillis() + " ms")).withCause(e).asRuntimeException();
    } finally {
      busy.remove(ch);
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
      return SimulatedLink.wrap(ch, address.toString());
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

  /**
   * Closes every connection, idle or carrying a request (which then fails at once: a shard dropped
   * as lost does not hold its callers until their deadlines); idempotent.
   */
  @Override
  public void close() {
    closed = true;
    for (ByteChannel ch = idle.poll(); ch != null; ch = idle.poll()) {
      closeQuietly(ch);
    }
    busy.forEach(BulkClient::closeQuietly);
  }
}
