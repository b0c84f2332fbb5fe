package io.sparkps.ps.bulk;

import io.grpc.Status;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.annotation.Internal;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.MessageDigest;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;

/**
 * The bulk port of one shard: one thread per connection, each serving one request at a time.
 * Reads of variables never wait here (the client awaits readability over gRPC first, where the
 * wait ends with its call); a pull of SYNC or SSP table rows waits on its connection's thread,
 * bounded by the request's wait. {@link #close()} closes the port and every connection, which ends their threads.
 *
 * <p>Strangers cannot exhaust it: at most {@value #MAX_PENDING} connections may be waiting to
 * authenticate (more are closed at once), each for {@value #HANDSHAKE_MILLIS} ms at the most, and
 * nothing beyond the handshake's few bytes is allocated for a connection before its token is
 * verified. Authenticated connections are capped too (sized from the run's workers); one over the
 * cap is refused with RESOURCE_EXHAUSTED. With TLS (the run's {@link PsTls}), the TLS handshake
 * comes first, within the same deadline: its engine's buffers (tens of KiB) are the one thing a
 * connection awaiting its handshake holds, and at most {@value #MAX_PENDING} of them exist.
 */
@Internal
public final class BulkServer implements AutoCloseable {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(BulkServer.class);
  /** Connections waiting to authenticate, at the most. */
  public static final int MAX_PENDING = 32;
  /** How long a connection may take to send its handshake. */
  public static final long HANDSHAKE_MILLIS = 5000;
  private final int maxConnections;
  private final java.util.concurrent.atomic.AtomicInteger pending = new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger serving = new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicLong refused = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.ScheduledExecutorService deadlines;
  private final ServerSocketChannel server;
  private final int port;
  private final byte[] token;
  private final ShardAccess access;
  private final String localId;
  private final ThreadFactory threads;
  private final PsTls tls;
  private final Set<SocketChannel> open = ConcurrentHashMap.newKeySet();
  private final RefusalLog refusals = new RefusalLog(System::nanoTime);
  private volatile boolean closed;

  /**
   * Binds {@code host} on any free port and starts accepting at most {@code maxConnections}
   * clients, over TLS when {@code tls} is not null.
   */
  public BulkServer(String host, PsToken token, PsTls tls, Updates updates, Reads reads, TableCalls tables,
      FloatPool pool, ThreadFactory threads, int maxConnections) throws IOException {
    this.maxConnections = maxConnections;
    this.tls = tls;
    this.deadlines = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(threads);
    this.server = ServerSocketChannel.open().bind(new InetSocketAddress(host, 0));
    this.port = ((InetSocketAddress) server.socket().getLocalSocketAddress()).getPort();
    this.token = token.secret().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    this.access = new ShardAccess(updates, reads, tables, pool);
    this.localId = LocalShards.register(this.token, access);
    this.threads = threads;
    threads.newThread(this::acceptLoop).start();
  }

  /** The key under which clients in this JVM find the shard ({@link LocalBulk}). */
  public String localId() {
    return localId;
  }

  /** The bound port. */
  public int port() {
    return port;
  }

  private void acceptLoop() {
    while (!closed) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (IOException e) {
        return;
      }
      if (pending.incrementAndGet() > MAX_PENDING) {
        pending.decrementAndGet();
        refused.incrementAndGet();
        closeQuietly(ch);
        continue;
      }
      try {
        ch.socket().setTcpNoDelay(true);
        ch.socket().setKeepAlive(true);
        open.add(ch);
        java.util.concurrent.ScheduledFuture<?> deadline = deadlines.schedule(() -> closeQuietly(ch), HANDSHAKE_MILLIS,
            java.util.concurrent.TimeUnit.MILLISECONDS);
        threads.newThread(() -> serve(ch, deadline)).start();
      } catch (IOException | RuntimeException | OutOfMemoryError e) {
        pending.decrementAndGet();
        open.remove(ch);
        closeQuietly(ch);
      }
    }
  }

  private static void closeQuietly(java.nio.channels.Channel ch) {
    try {
      ch.close();
    } catch (IOException e) {
      // closing: nothing more to do with it
    }
  }

  private void serve(SocketChannel socket, java.util.concurrent.Future<?> deadline) {
    boolean admitted = false;
    ByteChannel ch = socket;
    try {
      try {
        ch = tls == null ? socket : tls.acceptBulk(socket);
        admitted = handshake(ch, socket);
      } finally {
        deadline.cancel(false);
        pending.decrementAndGet();
      }
      if (!admitted) {
        return;
      }
      LOG.debug("bulk port {}: serving {}", port(), remote(socket));
      BulkConnection c = new BulkConnection(ch, access); // its buffer, only now that the token is verified
      while (!closed) {
        c.serveOne();
      }
    } catch (IOException e) {
      // the client closed the connection, failed the TLS handshake, missed the deadline, or the server is stopping
      LOG.debug("bulk port {}: the connection from {} ended: {}", port(), remote(socket), e.toString());
    } finally {
      if (admitted) {
        serving.decrementAndGet();
      }
      open.remove(socket);
      closeQuietly(ch);
    }
  }

  /** Checks the client's hello (magic, version, token) and takes a connection slot; false when refused. */
  private boolean handshake(ByteChannel ch, SocketChannel socket) throws IOException {
    ByteBuffer hello = BulkWire.read(ch, 12);
    int magic = hello.getInt();
    int version = hello.getInt();
    int length = hello.getInt();
    if (magic != BulkWire.MAGIC || version != BulkWire.VERSION) {
      warnRefused("protocol", socket, "not a SparkPS bulk client of protocol version " + BulkWire.VERSION);
      BulkWire.writeFully(ch, BulkWire.head(Status.Code.UNIMPLEMENTED.value(),
          BulkWire.utf8("not a SparkPS bulk client of protocol version " + BulkWire.VERSION), 0));
      return false;
    }
    byte[] given = length >= 0 && length <= 4096 ? BulkWire.read(ch, length).array() : new byte[0];
    if (!MessageDigest.isEqual(token, given)) {
      warnRefused("token", socket, "a wrong SparkPS token (not a task of this run)");
      BulkWire.writeFully(ch, BulkWire.head(Status.Code.UNAUTHENTICATED.value(),
          BulkWire.utf8("wrong SparkPS token on the bulk port: it accepts only tasks of its own run"), 0));
      return false;
    }
    if (serving.incrementAndGet() > maxConnections) {
      serving.decrementAndGet();
      refused.incrementAndGet();
      warnRefused("full", socket, "it serves " + maxConnections + " connections at the most (the ps's "
          + "maxBulkConnections)");
      BulkWire.writeFully(ch, BulkWire.head(Status.Code.RESOURCE_EXHAUSTED.value(), BulkWire.utf8("the bulk port "
          + "serves " + maxConnections + " connections at the most, and has them: the ps's maxBulkConnections"), 0));
      return false;
    }
    BulkWire.writeFully(ch, ByteBuffer.wrap(new byte[] {0}));
    return true;
  }

  /** A refused connection's line at WARN, unless one of its kind was written within {@link RefusalLog#INTERVAL}. */
  private void warnRefused(String kind, SocketChannel socket, String why) {
    long leftOut = refusals.admit(kind);
    if (leftOut >= 0) {
      LOG.warn("bulk port {}: refused {}: {}{}", port(), remote(socket), why, RefusalLog.since(leftOut));
    }
  }

  /** The address a connection comes from, for the log. */
  private static Object remote(SocketChannel socket) {
    try {
      return socket.getRemoteAddress();
    } catch (IOException e) {
      return "a closed connection";
    }
  }

  /** Connections refused so far: over the pending or the authenticated cap. */
  public long refused() {
    return refused.get();
  }

  /**
   * Batches of table rows this shard took through its bulk data plane (its port, and memory from
   * clients in its JVM): {@code PullEmbeddings} and {@code PushEmbeddings}, as the gRPC methods
   * that carry them otherwise.
   */
  public java.util.Map<String, Long> rowCallsServed() {
    long[] n = access.rowCalls();
    return java.util.Map.of("PullEmbeddings", n[0], "PushEmbeddings", n[1]);
  }

  /** Authenticated connections being served now. */
  public int serving() {
    return serving.get();
  }

  /** Stops accepting and closes every connection. */
  @Override
  public void close() {
    closed = true;
    deadlines.shutdownNow();
    LocalShards.unregister(localId);
    access.close();
    try {
      server.close();
    } catch (IOException e) {
      // closing: nothing more to do with it
    }
    for (SocketChannel ch : open) {
      try {
        ch.close();
      } catch (IOException e) {
        // closing: the serving thread ends on its next read
      }
    }
  }
}
