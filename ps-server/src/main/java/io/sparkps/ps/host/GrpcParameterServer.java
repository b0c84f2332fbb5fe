package io.sparkps.ps.host;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.ServerSettings;
import io.sparkps.ps.bulk.BulkServer;
import io.sparkps.ps.client.RunChannels;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.PsMethods;
import io.sparkps.ps.grpc.PsService;
import io.sparkps.ps.server.EmbeddingTables;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.server.Waiters;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.wire.WireLimits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
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
 * The gRPC implementation of a {@link ParameterServer}: one shard, a gRPC server (Netty on a host
 * and port, or in-process for tests) and a bulk port, hosting the slices of variables that the
 * placement gives to shard {@code shardIndex}.
 *
 * <p>The server owns its threads (event loops, handler pool, wait timer) and releases them all
 * in {@link #close()}; it stops by itself when a client with the run's token calls
 * {@code PsClient.shutdownServers()}.
 */
final class GrpcParameterServer implements ParameterServer {
  private static final Logger LOG = LoggerFactory.getLogger(ParameterServer.class);
  private final ServerSettings config;
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

  GrpcParameterServer(ServerSettings config) {
    this.config = config;
  }

  @Override
  public synchronized ParameterServer start() {
    if (server != null || closed) {
      throw new IllegalStateException("ps " + config.shardIndex() + " was already started");
    }
    String name = "sparkps-ps-" + config.shardIndex();
    executor = Executors.newFixedThreadPool(config.threads(), new DefaultThreadFactory(name + "-handler", true));
    timer = Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory(name + "-timer", true));
    waiters = new Waiters(timer, executor);
    ShardStore store = new ShardStore(config.shardIndex(), waiters, new WireLimits(config.maxVariableElements()));
    FloatPool pool = new FloatPool(256L << 20);
    TableCalls tableCalls = new TableCalls(new EmbeddingTables(config.shardIndex(), store::groupSpec), waiters,
        config.maxWait().toMillis(), "ps " + config.shardIndex());
    int bulkPort = 0;
    String localId = "";
    if (config.inProcessName() == null) {
      try {
        bulk = new BulkServer(config.host(), config.token(), config.tls(), new Updates(store), new Reads(store, config.chunkBytes() / 4),
            tableCalls, pool, new DefaultThreadFactory(name + "-bulk", true), config.maxBulkConnections());
        bulkPort = bulk.port();
        localId = bulk.localId();
      } catch (IOException e) {
        releaseThreads();
        throw new UncheckedIOException("ps " + config.shardIndex() + " could not open its bulk port on "
            + config.host() + " (" + e.getMessage() + ")", e);
      }
    }
    PsService service = new PsService(store, waiters, tableCalls, pool, config.chunkBytes() / 4,
        config.inProcessName() != null, config.maxWait().toMillis(), bulkPort, localId, this::closeInBackground);
    // Interceptors run last-added first: the token is checked before a call is counted and logged.
    var definition = ServerInterceptors.intercept(service.definition(), new io.sparkps.ps.grpc.CallLog(
        "ps " + config.shardIndex()), countCalls(), Auth.server(config.token(), "ps " + config.shardIndex()));
    try {
      if (config.inProcessName() != null) {
        server = InProcessServerBuilder.forName(config.inProcessName()).executor(executor)
            .addService(definition).build().start();
      } else {
        eventLoops = new NioEventLoopGroup(config.threads(), new DefaultThreadFactory(name + "-netty", true));
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(config.host(), config.port()));
        if (config.tls() != null) {
          builder.sslContext(config.tls().grpcServer());
        }
        server = RunChannels.hardened(builder).channelType(NioServerSocketChannel.class).bossEventLoopGroup(eventLoops)
            .workerEventLoopGroup(eventLoops).executor(executor)
            .flowControlWindow(config.flowControlWindow())
            .maxInboundMessageSize(PsMethods.MAX_SERVER_MESSAGE_BYTES)
            .addService(definition).build().start();
      }
    } catch (IOException e) {
      releaseThreads();
      throw new UncheckedIOException("ps " + config.shardIndex() + " could not bind " + config.host() + ":"
          + config.port() + " (" + e.getMessage() + "); choose another port or 0 for any free port", e);
    }
    port = config.inProcessName() != null ? -1 : server.getPort();
    LOG.info("ps {} serving at {}{}", config.shardIndex(), address(),
        config.tls() == null || config.inProcessName() != null ? " (plaintext)" : " (TLS by " + io.sparkps.ps.tls.PsTls.provider() + ", certificate " + config.tls() + ")");
    return this;
  }

  @Override
  public int port() {
    int bound = port;
    if (bound == 0) {
      throw new IllegalStateException("ps " + config.shardIndex() + " has no port before start(): start it first");
    }
    return bound;
  }

  @Override
  public int bulkPort() {
    return bulk == null ? -1 : bulk.port();
  }

  @Override
  public String address() {
    return config.inProcessName() != null ? "inprocess:" + config.inProcessName() : config.host() + ":" + port();
  }

  @Override
  public int pendingWaits() {
    return waiters == null ? 0 : waiters.size();
  }

  @Override
  public Map<String, Long> callsServed() {
    Map<String, Long> out = new java.util.TreeMap<>();
    calls.forEach((method, n) -> out.put(method, n.sum()));
    BulkServer b = bulk;
    if (b != null) {
      b.rowCallsServed().forEach((method, n) -> out.merge(method, n, Long::sum));
    }
    return out;
  }

  @Override
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

  @Override
  public int shardIndex() {
    return config.shardIndex();
  }

  @Override
  public boolean awaitTermination(Duration timeout) throws InterruptedException {
    return terminated.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

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
      LOG.info("ps {} stopped", config.shardIndex());
    }
  }

  private void closeInBackground() {
    Thread t = new Thread(this::close, "sparkps-ps-" + config.shardIndex() + "-shutdown");
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
}
