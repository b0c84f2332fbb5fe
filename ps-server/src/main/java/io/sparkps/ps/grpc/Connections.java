package io.sparkps.ps.grpc;

import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.sparkps.ps.PsToken;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The channels of one client to all shards, with the threads they run on. It creates them, so
 * it shuts them down ({@link #close()}); the stubs it hands out never do.
 */
public final class Connections implements AutoCloseable {
  private static final String IN_PROCESS = "inprocess:";
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<ShardStub> stubs = new ArrayList<>();
  private final ExecutorService executor;
  private final EventLoopGroup eventLoops;

  /**
   * Channels to {@code addresses} ({@code host:port} or {@code inprocess:name}), index i being
   * shard i, each call carrying {@code token}.
   */
  public Connections(List<String> addresses, PsToken token, Duration callTimeout, int flowControlWindow) {
    executor = Executors.newCachedThreadPool(new DefaultThreadFactory("sparkps-client", true));
    boolean anyNetty = addresses.stream().anyMatch(a -> !a.startsWith(IN_PROCESS));
    eventLoops = anyNetty ? new NioEventLoopGroup(1, new DefaultThreadFactory("sparkps-client-netty", true)) : null;
    for (int i = 0; i < addresses.size(); i++) {
      String address = addresses.get(i);
      ManagedChannel channel = address.startsWith(IN_PROCESS)
          ? InProcessChannelBuilder.forName(address.substring(IN_PROCESS.length())).executor(executor)
              .intercept(Auth.client(token)).build()
          : netty(address, token, flowControlWindow);
      channels.add(channel);
      stubs.add(new ShardStub(i, address, channel, callTimeout));
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
    return NettyChannelBuilder.forAddress(address.substring(0, colon), port).usePlaintext()
        .channelType(NioSocketChannel.class).eventLoopGroup(eventLoops).executor(executor)
        .flowControlWindow(flowControlWindow).maxInboundMessageSize(PsMethods.MAX_MESSAGE_BYTES)
        .intercept(Auth.client(token)).build();
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
    executor.shutdownNow();
    if (eventLoops != null) {
      eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }
}
