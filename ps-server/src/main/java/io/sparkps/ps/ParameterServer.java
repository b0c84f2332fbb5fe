package io.sparkps.ps;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.sparkps.ps.bulk.BulkServer;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.PsMethods;
import io.sparkps.ps.grpc.PsService;
import io.sparkps.ps.server.EmbeddingTables;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.server.Waiters;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.wire.WireLimits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One parameter-server shard: a gRPC server (Netty on a host and port, or in-process for tests)
 * hosting the slices of variables that the placement gives to shard {@code shardIndex}.
 *
 * <p>The server owns its threads (event loops, handler pool, wait timer) and releases them all
 * in {@link #close()}; it stops by itself when a client with the run's token calls
 * {@code PsClient.shutdownServers()}.
 */
public final class ParameterServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ParameterServer.class);
  /** Seconds a connection may take to finish its TLS and HTTP/2 handshakes. */
  public static final int HANDSHAKE_SECONDS = 5;
  /** Minutes a connection may stay without calls before the server closes it. */
  public static final int MAX_IDLE_MINUTES = 10;
  /** Calls one connection may have open at once. */
  public static final int MAX_CALLS_PER_CONNECTION = 1024;

  private final Builder config;
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final Map<String, LongAdder> calls = new ConcurrentHashMap<>();
  private Server server;
  /** The bound port, kept at start (gRPC refuses to tell it once the server terminated); 0 before, -1 in process. */
  private volatile int port;
  private ExecutorService executor;
  private ScheduledExecutorService timer;
  private EventLoopGroup eventLoops;
  private volatile BulkServer bulk;
  private Waiters waiters;
  private boolean closed;

  private ParameterServer(Builder config) {
    this.config = config;
  }

  /** A builder; {@link Builder#setShardIndex} and {@link Builder#setToken} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** Binds and starts serving; returns this server. */
  public synchronized ParameterServer start() {
    if (server != null || closed) {
      throw new IllegalStateException("ps " + config.shardIndex + " was already started");
    }
    String name = "sparkps-ps-" + config.shardIndex;
    executor = Executors.newFixedThreadPool(config.threads, new DefaultThreadFactory(name + "-handler", true));
    timer = Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory(name + "-timer", true));
    waiters = new Waiters(timer, executor);
    ShardStore store = new ShardStore(config.shardIndex, waiters, new WireLimits(config.maxVariableElements));
    FloatPool pool = new FloatPool(256L << 20);
    TableCalls tableCalls = new TableCalls(new EmbeddingTables(config.shardIndex, store::groupSpec), waiters,
        config.maxWait.toMillis(), "ps " + config.shardIndex);
    int bulkPort = 0;
    String localId = "";
    if (config.inProcessName == null) {
      try {
        bulk = new BulkServer(config.host, config.token, config.tls, new Updates(store), new Reads(store, config.chunkBytes / 4),
            tableCalls, pool, new DefaultThreadFactory(name + "-bulk", true), config.maxBulkConnections);
        bulkPort = bulk.port();
        localId = bulk.localId();
      } catch (IOException e) {
        releaseThreads();
        throw new UncheckedIOException("ps " + config.shardIndex + " could not open its bulk port on "
            + config.host + " (" + e.getMessage() + ")", e);
      }
    }
    PsService service = new PsService(store, waiters, tableCalls, pool, config.chunkBytes / 4,
        config.inProcessName != null, config.maxWait.toMillis(), bulkPort, localId, this::closeInBackground);
    // Interceptors run last-added first: the token is checked before a call is counted and logged.
    var definition = ServerInterceptors.intercept(service.definition(), new io.sparkps.ps.grpc.CallLog(
        "ps " + config.shardIndex), countCalls(), Auth.server(config.token, "ps " + config.shardIndex));
    try {
      if (config.inProcessName != null) {
        server = InProcessServerBuilder.forName(config.inProcessName).executor(executor)
            .addService(definition).build().start();
      } else {
        eventLoops = new NioEventLoopGroup(config.threads, new DefaultThreadFactory(name + "-netty", true));
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(config.host, config.port));
        if (config.tls != null) {
          builder.sslContext(config.tls.grpcServer());
        }
        server = hardened(builder).channelType(NioServerSocketChannel.class).bossEventLoopGroup(eventLoops)
            .workerEventLoopGroup(eventLoops).executor(executor)
            .flowControlWindow(config.flowControlWindow)
            .maxInboundMessageSize(PsMethods.MAX_SERVER_MESSAGE_BYTES)
            .addService(definition).build().start();
      }
    } catch (IOException e) {
      releaseThreads();
      throw new UncheckedIOException("ps " + config.shardIndex + " could not bind " + config.host + ":"
          + config.port + " (" + e.getMessage() + "); choose another port or 0 for any free port", e);
    }
    port = config.inProcessName != null ? -1 : server.getPort();
    LOG.info("ps {} serving at {}{}", config.shardIndex, address(),
        config.tls == null || config.inProcessName != null ? " (plaintext)" : " (TLS by " + io.sparkps.ps.tls.PsTls.provider() + ", certificate " + config.tls + ")");
    return this;
  }

  /**
   * What a server on a shared network needs: a connection that has not finished its TLS and
   * HTTP/2 handshakes within {@value #HANDSHAKE_SECONDS} s is closed (so idle strangers hold
   * nothing for long); one without calls for {@value #MAX_IDLE_MINUTES} min is closed too (a
   * client reconnects on its next call); keepalive pings more often than clients send them are
   * refused, and so are streams beyond {@value #MAX_CALLS_PER_CONNECTION} per connection.
   */
  public static NettyServerBuilder hardened(NettyServerBuilder builder) {
    return builder.handshakeTimeout(HANDSHAKE_SECONDS, TimeUnit.SECONDS)
        .maxConnectionIdle(MAX_IDLE_MINUTES, TimeUnit.MINUTES)
        .permitKeepAliveTime(io.sparkps.ps.grpc.Connections.KEEPALIVE_SECONDS / 2, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(true)
        .maxConcurrentCallsPerConnection(MAX_CALLS_PER_CONNECTION);
  }

  /** The bound port (the real one when 0 was asked for), also after the server stopped; -1 in process. */
  public int port() {
    int bound = port;
    if (bound == 0) {
      throw new IllegalStateException("ps " + config.shardIndex + " has no port before start(): start it first");
    }
    return bound;
  }

  /** The bulk port (its number is in the hello reply); -1 in process. */
  public int bulkPort() {
    return bulk == null ? -1 : bulk.port();
  }

  /** Where clients reach this shard: {@code host:port}, or {@code inprocess:name}. */
  public String address() {
    return config.inProcessName != null ? "inprocess:" + config.inProcessName : config.host + ":" + port();
  }

  /** Calls waiting on this shard right now (SYNC/SSP reads, initialization waits): for inspection. */
  public int pendingWaits() {
    return waiters == null ? 0 : waiters.size();
  }

  /**
   * The calls this shard took so far, by gRPC method ({@code PullEmbeddings}, {@code Update}, ...;
   * those refused for a missing token not counted), with the batches of table rows that came
   * through the bulk data plane counted under their methods' names too: for inspection, e.g. round
   * trips per step.
   */
  public Map<String, Long> callsServed() {
    Map<String, Long> out = new java.util.TreeMap<>();
    calls.forEach((method, n) -> out.put(method, n.sum()));
    BulkServer b = bulk;
    if (b != null) {
      b.rowCallsServed().forEach((method, n) -> out.merge(method, n, Long::sum));
    }
    return out;
  }

  /** The batches of table rows this shard took through its bulk data plane, by method (see {@link #callsServed}). */
  public Map<String, Long> rowCallsOverBulk() {
    BulkServer b = bulk;
    return b == null ? Map.of() : new java.util.TreeMap<>(b.rowCallsServed());
  }

  private io.grpc.ServerInterceptor countCalls() {
    return new io.grpc.ServerInterceptor() {
      @Override
      public <Q, A> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, A> call,
          io.grpc.Metadata headers, io.grpc.ServerCallHandler<Q, A> next) {
        calls.computeIfAbsent(call.getMethodDescriptor().getBareMethodName(), m -> new LongAdder()).increment();
        return next.startCall(call, headers);
      }
    };
  }

  /** This shard's index. */
  public int shardIndex() {
    return config.shardIndex;
  }

  /** Waits until the server has stopped (by {@link #close()} or a client's shutdown call). */
  public boolean awaitTermination(Duration timeout) throws InterruptedException {
    return terminated.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Stops accepting calls, ends pending calls and waits, and releases every thread and port. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      if (server != null) {
        server.shutdown();
        if (!server.awaitTermination(2, TimeUnit.SECONDS)) {
          server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      releaseThreads();
      terminated.countDown();
      LOG.info("ps {} stopped", config.shardIndex);
    }
  }

  private void closeInBackground() {
    Thread t = new Thread(this::close, "sparkps-ps-" + config.shardIndex + "-shutdown");
    t.setDaemon(true);
    t.start();
  }

  private void releaseThreads() {
    if (bulk != null) {
      bulk.close();
    }
    if (eventLoops != null) {
      eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
    if (executor != null) {
      executor.shutdownNow();
    }
    if (timer != null) {
      timer.shutdownNow();
    }
  }

  /** Configures a {@link ParameterServer}. */
  public static final class Builder {
    private int shardIndex = -1;
    private PsToken token;
    private String host = "127.0.0.1";
    private int port;
    private String inProcessName;
    private int threads = Math.max(2, Runtime.getRuntime().availableProcessors());
    private Duration maxWait = Duration.ofMinutes(10);
    private int chunkBytes = 1 << 20;
    private int flowControlWindow = 32 << 20;
    private int maxBulkConnections = 64;
    private io.sparkps.ps.tls.PsTls tls;
    private long maxVariableElements = WireLimits.DEFAULT_MAX_VARIABLE_ELEMENTS;

    private Builder() {}

    /** This shard's index among the run's ps shards (required). */
    public Builder setShardIndex(int shardIndex) {
      this.shardIndex = shardIndex;
      return this;
    }

    /** The run's secret (required). */
    public Builder setToken(PsToken token) {
      this.token = Objects.requireNonNull(token, "token");
      return this;
    }

    /**
     * Serve gRPC and the bulk port over TLS with the run's certificate, and require it of clients
     * (default: plaintext). Ignored in process.
     */
    public Builder optTls(io.sparkps.ps.tls.PsTls tls) {
      this.tls = Objects.requireNonNull(tls, "tls");
      return this;
    }

    /** The address to bind (default 127.0.0.1; on a cluster, the executor's own host). */
    public Builder optHost(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /** The port to bind; 0 (the default) takes any free port. */
    public Builder optPort(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be in 0..65535, got " + port);
      }
      this.port = port;
      return this;
    }

    /** Serve in process under this name instead of on a socket (for tests). */
    public Builder optInProcess(String name) {
      this.inProcessName = Objects.requireNonNull(name, "name");
      return this;
    }

    /** Handler and event-loop threads (default: the cores, at least 2). */
    public Builder optThreads(int threads) {
      if (threads < 1) {
        throw new IllegalArgumentException("threads must be >= 1, got " + threads);
      }
      this.threads = threads;
      return this;
    }

    /** The longest any server-side wait may last, whatever the client asks (default 10 min). */
    public Builder optMaxWait(Duration maxWait) {
      if (maxWait.isNegative() || maxWait.isZero()) {
        throw new IllegalArgumentException("maxWait must be > 0, got " + maxWait);
      }
      this.maxWait = maxWait;
      return this;
    }

    /**
     * Authenticated connections the bulk port serves at once (default 64); size it from the
     * clients (a few per worker). Strangers are capped apart (see {@code BulkServer}).
     */
    public Builder optMaxBulkConnections(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("maxBulkConnections must be >= 1, got " + n);
      }
      this.maxBulkConnections = n;
      return this;
    }

    /**
     * The most elements a variable may have (default 2^30, 4 GiB of float32): a create asking for
     * more is refused before anything is allocated, and so is a pull of more rows than that.
     */
    public Builder optMaxVariableElements(long elements) {
      if (elements < 1) {
        throw new IllegalArgumentException("maxVariableElements must be >= 1, got " + elements);
      }
      this.maxVariableElements = elements;
      return this;
    }

    /** Largest payload of one pulled frame (default 1 MiB). */
    public Builder optChunkBytes(int chunkBytes) {
      if (chunkBytes < 1024 || chunkBytes > (64 << 20)) {
        throw new IllegalArgumentException("chunkBytes must be in 1 KiB..64 MiB, got " + chunkBytes);
      }
      this.chunkBytes = chunkBytes;
      return this;
    }

    /** HTTP/2 flow-control window per stream (default 32 MiB). */
    public Builder optFlowControlWindow(int bytes) {
      if (bytes < 65535) {
        throw new IllegalArgumentException("flowControlWindow must be >= 65535, got " + bytes);
      }
      this.flowControlWindow = bytes;
      return this;
    }

    /** Validates and creates the (not yet started) server. */
    public ParameterServer build() {
      if (shardIndex < 0) {
        throw new IllegalArgumentException("shardIndex must be >= 0, got " + shardIndex);
      }
      if (token == null) {
        throw new IllegalArgumentException("token is required: every call to the server must carry the run's PsToken");
      }
      return new ParameterServer(this);
    }
  }
}
