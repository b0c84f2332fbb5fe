package io.sparkps.ps.grpc;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.sparkps.ps.bulk.BulkChannel;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.bulk.LocalBulk;
import io.sparkps.ps.grpc.proto.HelloReply;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.annotation.Internal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The channels of one client to all shards, with the threads they run on. It creates them, so
 * it shuts them down ({@link #close()}); the stubs it hands out never do.
 */
@Internal
public final class Connections implements AutoCloseable {
  private static final String IN_PROCESS = "inprocess:";
  /** Seconds between keepalive pings (gRPC's least), which servers permit (see {@code ParameterServer}). */
  public static final int KEEPALIVE_SECONDS = 10;
  private static final int KEEPALIVE_TIMEOUT_SECONDS = 5;
  private final List<ManagedChannel> channels = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final PsToken token;
  private final PsTls tls;
  private final int flowControlWindow;
  private final Duration callTimeout;
  private final ScheduledExecutorService timer;
  private final Map<Integer, Optional<BulkChannel>> bulk = new ConcurrentHashMap<>();
  private final List<ShardStub> stubs = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final ExecutorService executor;
  private final EventLoopGroup eventLoops;
  private final boolean sameJvm;
  private final boolean bf16;

  /**
   * Channels to {@code addresses} ({@code host:port} or {@code inprocess:name}), index i being
   * shard i, each call carrying {@code token}, over TLS pinned to {@code tls} unless it is null;
   * bulk transfers to shards in this JVM go through memory when {@code sameJvm} is set.
   */
  public Connections(List<String> addresses, PsToken token, PsTls tls, Duration callTimeout, int flowControlWindow,
      boolean sameJvm) {
    this(addresses, token, tls, callTimeout, flowControlWindow, sameJvm, false);
  }

  /** As above; with {@code bf16}, transfers over bulk ports carry bfloat16 values. */
  public Connections(List<String> addresses, PsToken token, PsTls tls, Duration callTimeout, int flowControlWindow,
      boolean sameJvm, boolean bf16) {
    this.sameJvm = sameJvm;
    this.bf16 = bf16;
    this.token = token;
    this.tls = tls;
    this.flowControlWindow = flowControlWindow;
    this.callTimeout = callTimeout;
    executor = Executors.newCachedThreadPool(new DefaultThreadFactory("sparkps-client", true));
    timer = Executors.newSingleThreadScheduledExecutor(new DefaultThreadFactory("sparkps-client-timer", true));
    boolean anyNetty = addresses.stream().anyMatch(a -> !a.startsWith(IN_PROCESS));
    eventLoops = anyNetty ? new NioEventLoopGroup(1, new DefaultThreadFactory("sparkps-client-netty", true)) : null;
    for (int i = 0; i < addresses.size(); i++) {
      ManagedChannel channel = channel(addresses.get(i));
      channels.add(channel);
      stubs.add(new ShardStub(i, addresses.get(i), channel, callTimeout));
    }
  }

  private ManagedChannel channel(String address) {
    return address.startsWith(IN_PROCESS)
        ? InProcessChannelBuilder.forName(address.substring(IN_PROCESS.length())).executor(executor)
            .intercept(Auth.client(token)).build()
        : netty(address, token, flowControlWindow);
  }

  /**
   * Points shard {@code shard} at {@code address} (its replacement): later calls go there; the old
   * channel and bulk connection are closed, which fails the calls still on them.
   */
  public synchronized void replace(int shard, String address) {
    if (eventLoops == null && !address.startsWith(IN_PROCESS)) {
      throw new IllegalArgumentException("ps " + shard + " moved to " + address + ", but this client only talks in process");
    }
    ManagedChannel old = channels.get(shard);
    ManagedChannel channel = channel(address);
    channels.set(shard, channel);
    stubs.set(shard, new ShardStub(shard, address, channel, callTimeout));
    old.shutdownNow();
    Optional<BulkChannel> oldBulk = bulk.remove(shard);
    if (oldBulk != null) {
      oldBulk.ifPresent(BulkChannel::close);
    }
  }

  /**
   * Fails every call in flight to shard {@code shard} if it is still at {@code address} (it was
   * declared lost): its channel and bulk connection close; the stub stays until {@link #replace}.
   */
  public synchronized void drop(int shard, String address) {
    if (stubs.get(shard).address().equals(address)) {
      channels.get(shard).shutdownNow();
      Optional<BulkChannel> oldBulk = bulk.get(shard);
      if (oldBulk != null) {
        oldBulk.ifPresent(BulkChannel::close);
      }
    }
  }

  private ManagedChannel netty(String address, PsToken token, int flowControlWindow) {
    int colon = address.lastIndexOf(':');
    if (colon <= 0) {
      throw new IllegalArgumentException("ps address '" + address + "' must be host:port or inprocess:name");
    }
    int port;
    try {
      port = Integer.parseInt(address.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("ps address '" + address + "' has no numeric port", e);
    }
    // Keepalive pings find a peer that stopped answering (a hung or partitioned ps) on an idle channel.
    return secured(NettyChannelBuilder.forAddress(address.substring(0, colon), port), tls)
        .keepAliveTime(KEEPALIVE_SECONDS, TimeUnit.SECONDS).keepAliveTimeout(KEEPALIVE_TIMEOUT_SECONDS, TimeUnit.SECONDS)
        .keepAliveWithoutCalls(true)
        .channelType(NioSocketChannel.class).eventLoopGroup(eventLoops).executor(executor)
        .flowControlWindow(flowControlWindow).maxInboundMessageSize(PsMethods.MAX_MESSAGE_BYTES)
        .intercept(Auth.client(token)).build();
  }

  /** Plaintext without {@code tls}; else TLS with the run's certificate pinned and presented. */
  public static NettyChannelBuilder secured(NettyChannelBuilder builder, PsTls tls) {
    return tls == null ? builder.usePlaintext() : builder.sslContext(tls.grpcClient()).overrideAuthority(PsTls.AUTHORITY);
  }

  /** Bytes sent and received over the shards' bulk ports so far (same-JVM and gRPC transfers not counted). */
  public long bulkWireBytes() {
    long sum = 0;
    for (Optional<BulkChannel> b : bulk.values()) {
      if (b.isPresent() && b.get() instanceof io.sparkps.ps.bulk.BulkClient c) {
        sum += c.wireBytes();
      }
    }
    return sum;
  }

  /** Runs the client's background work (bulk transfers run here, in parallel across shards). */
  public Executor executor() {
    return executor;
  }

  /**
   * The bulk channel of a shard, or null when it has none (in process): through memory when the
   * shard runs in this JVM (and {@code sameJvm} is on), else over its bulk port. Asks the shard
   * once, and checks that it is the shard the address list says it is.
   */
  public BulkChannel bulk(int shard) {
    return bulk.computeIfAbsent(shard, this::openBulk).orElse(null);
  }

  private Optional<BulkChannel> openBulk(int shard) {
    String address = stubs.get(shard).address();
    if (address.startsWith(IN_PROCESS)) {
      return Optional.empty();
    }
    HelloReply hello;
    try {
      hello = stubs.get(shard).hello().get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      throw Status.DEADLINE_EXCEEDED.withDescription("no answer to hello within " + callTimeout.toMillis() + " ms")
          .asRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    }
    if (hello.getShard() != shard) {
      throw new IllegalStateException(address + " serves ps " + hello.getShard() + " but is listed as ps " + shard
          + ": list the ps addresses in shard order");
    }
    if (hello.getBulkPort() == 0) {
      return Optional.empty();
    }
    if (sameJvm) {
      Optional<BulkChannel> local = LocalBulk.find(hello.getLocalId(), token, "ps " + shard + " at " + address);
      if (local.isPresent()) {
        return local;
      }
    }
    String host = address.substring(0, address.lastIndexOf(':'));
    return Optional.of(new BulkClient(host, hello.getBulkPort(), token, tls, callTimeout, timer, bf16));
  }

  /**
   * Whether the shard's bulk transfers go through memory (it runs in this JVM and same-JVM
   * transfers are on). False when the shard does not answer: the call that follows fails with
   * the mapped error.
   */
  public boolean sameJvm(int shard) {
    try {
      return this.sameJvm && bulk(shard) instanceof LocalBulk;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** One stub per shard, index i for shard i. */
  public List<ShardStub> stubs() {
    return stubs;
  }

  /** Shuts the channels and threads down, waiting a bounded time. Idempotent. */
  @Override
  public void close() {
    for (ManagedChannel c : channels) {
      c.shutdownNow();
    }
    try {
      for (ManagedChannel c : channels) {
        c.awaitTermination(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    bulk.values().forEach(b -> b.ifPresent(BulkChannel::close));
    executor.shutdownNow();
    timer.shutdownNow();
    if (eventLoops != null) {
      eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }
}
