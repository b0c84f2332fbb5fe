package io.sparkps.spark.coord;

import io.grpc.Context;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.stub.StreamObserver;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.client.RunChannels;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.spark.coord.proto.Ack;
import io.sparkps.spark.coord.proto.AwaitWorkersReply;
import io.sparkps.spark.coord.proto.AwaitWorkersRequest;
import io.sparkps.spark.coord.proto.CoordinatorGrpc;
import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.coord.proto.HeartbeatReply;
import io.sparkps.spark.coord.proto.HeartbeatRequest;
import io.sparkps.spark.coord.proto.RegisterReply;
import io.sparkps.spark.coord.proto.Registration;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The coordinator service in the driver. It owns its server, threads and port, and releases
 * them in {@link #close()}.
 */
public final class CoordinatorServer implements AutoCloseable {
  /** Longest one AwaitRefill call waits (the keeper of a copy asks again; a call never holds a thread long). */
  private static final long MAX_REFILL_WAIT_MILLIS = 10_000;
  private final Registry registry;
  private final EventLoopGroup loops = new NioEventLoopGroup(1, new DefaultThreadFactory("sparkps-coordinator-netty", true));
  private final ExecutorService executor;
  private final Server server;
  private final String host;

  /**
   * Starts serving {@code registry} on {@code host} (any free port) for calls carrying {@code token},
   * over TLS with the run's certificate unless {@code tls} is null.
   */
  public CoordinatorServer(String host, PsToken token, PsTls tls, Registry registry) {
    this.registry = registry;
    this.host = host;
    // Bounded: enough for every wait the run's tasks can have open at once, and a few calls besides.
    this.executor = Executors.newFixedThreadPool(registry.maxConcurrentCalls(),
        new DefaultThreadFactory("sparkps-coordinator", true));
    try {
      NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(host, 0));
      if (tls != null) {
        builder.sslContext(tls.grpcServer());
      }
      server = RunChannels.hardened(builder).channelType(NioServerSocketChannel.class)
          .bossEventLoopGroup(loops).workerEventLoopGroup(loops).executor(executor)
          .addService(ServerInterceptors.intercept(new Service(), RunChannels.requireToken(token, "the SparkPS coordinator")))
          .build().start();
    } catch (IOException e) {
      close();
      throw new UncheckedIOException("the SparkPS coordinator could not bind " + host + ": " + e.getMessage(), e);
    }
  }

  /** {@code host:port} of the coordinator. */
  public String address() {
    return host + ":" + server.getPort();
  }

  /** The run's registry. */
  public Registry registry() {
    return registry;
  }

  /** Stops the server (pending calls end) and its threads, waiting a bounded time. */
  @Override
  public void close() {
    registry.stop();
    if (server != null) {
      server.shutdownNow();
      try {
        server.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    executor.shutdownNow();
    loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  private final class Service extends CoordinatorGrpc.CoordinatorImplBase {
    @Override
    public void register(Registration request, StreamObserver<RegisterReply> response) {
      try {
        registry.register(request);
      } catch (IllegalArgumentException | IllegalStateException e) {
        Status code = e instanceof IllegalArgumentException ? Status.INVALID_ARGUMENT
            : e instanceof Slots.Superseded ? Status.FAILED_PRECONDITION : Status.ALREADY_EXISTS;
        response.onError(code.withDescription(e.getMessage()).asRuntimeException());
        return;
      }
      RegisterReply.Builder reply = RegisterReply.newBuilder();
      if (request.getRole() == io.sparkps.spark.coord.proto.Role.CHIEF
          || request.getRole() == io.sparkps.spark.coord.proto.Role.WORKER
          || request.getRole() == io.sparkps.spark.coord.proto.Role.EVALUATOR) {
        registry.psAddresses().forEach(a -> reply.addPsAddresses(a == null ? "" : a));
      }
      response.onNext(reply.build());
      response.onCompleted();
    }

    @Override
    public void awaitWorkers(AwaitWorkersRequest request, StreamObserver<AwaitWorkersReply> response) {
      Context context = Context.current();
      List<Integer> missing;
      try {
        missing = registry.awaitWorkers(request.getAttempt(), request.getPhase(), request.getIndex(),
            request.getTimeoutMs(), context::isCancelled);
      } catch (IllegalArgumentException e) {
        response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        response.onError(Status.CANCELLED.withDescription("the coordinator is stopping").asRuntimeException());
        return;
      }
      FailureReport failed = registry.failedWorker(request.getAttempt());
      if (missing.isEmpty()) {
        response.onNext(AwaitWorkersReply.getDefaultInstance());
        response.onCompleted();
      } else if (failed != null) {
        response.onError(Status.ABORTED.withDescription("stage attempt " + request.getAttempt() + " is failing: "
            + failed.getRole().name().toLowerCase() + " " + failed.getIndex() + " failed with "
            + failed.getError().getClassName() + ": " + failed.getError().getMessage()).asRuntimeException());
      } else {
        response.onError(Status.DEADLINE_EXCEEDED.withDescription("workers " + missing + " of stage attempt "
            + request.getAttempt() + (request.getPhase() == 0 ? " did not register"
                : " did not reach barrier " + request.getPhase()) + " within " + request.getTimeoutMs() + " ms"
            + (registry.isStopping() ? " (the run is stopping)" : "; are there enough free task slots for the barrier stage?"))
            .asRuntimeException());
      }
    }

    @Override
    public void heartbeat(HeartbeatRequest request, StreamObserver<HeartbeatReply> response) {
      response.onNext(registry.heartbeat(request));
      response.onCompleted();
    }

    @Override
    public void awaitPs(io.sparkps.spark.coord.proto.AwaitPsRequest request,
        StreamObserver<io.sparkps.spark.coord.proto.AwaitPsReply> response) {
      Context context = Context.current();
      String address;
      try {
        address = registry.awaitPs(request.getIndex(), request.getLostAddress(), request.getTimeoutMs(),
            context::isCancelled);
      } catch (IllegalArgumentException e) {
        response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        response.onError(Status.CANCELLED.withDescription("the coordinator is stopping").asRuntimeException());
        return;
      }
      if (address == null) {
        response.onError(Status.DEADLINE_EXCEEDED.withDescription("no replacement of ps " + request.getIndex()
            + " (lost at " + request.getLostAddress() + ") registered within " + request.getTimeoutMs() + " ms"
            + (registry.isStopping() ? " (the run is stopping)" : "; see the job 'sparkps ps " + request.getIndex()
                + "' in the Spark UI: is there a free task slot for it?")).asRuntimeException());
        return;
      }
      response.onNext(io.sparkps.spark.coord.proto.AwaitPsReply.newBuilder().setAddress(address).build());
      response.onCompleted();
    }

    @Override
    public void awaitRefill(io.sparkps.spark.coord.proto.AwaitRefillRequest request,
        StreamObserver<io.sparkps.spark.coord.proto.AwaitRefillReply> response) {
      Registry.RefillOrder order;
      try {
        order = registry.awaitRefill(request.getAttempt(), Math.min(request.getTimeoutMs(), MAX_REFILL_WAIT_MILLIS));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        response.onError(Status.CANCELLED.withDescription("the coordinator is stopping").asRuntimeException());
        return;
      }
      List<String> addresses = registry.psAddresses();
      response.onNext(io.sparkps.spark.coord.proto.AwaitRefillReply.newBuilder().addAllShards(order.shards())
          .setRelease(order.release()).addAllPsAddresses(addresses.contains(null) ? List.of() : addresses).build());
      response.onCompleted();
    }

    @Override
    public void requestRefill(io.sparkps.spark.coord.proto.RefillRequest request, StreamObserver<Ack> response) {
      registry.requestRefill(request.getAttempt(), request.getShardsList());
      response.onNext(Ack.getDefaultInstance());
      response.onCompleted();
    }

    @Override
    public void reportRecovery(io.sparkps.spark.coord.proto.RecoveryReport request, StreamObserver<Ack> response) {
      registry.recovered(request.getIndex(), request.getWorker(), request.getStep(), request.getSource());
      response.onNext(Ack.getDefaultInstance());
      response.onCompleted();
    }

    @Override
    public void reportFailure(FailureReport request, StreamObserver<Ack> response) {
      registry.fail(request);
      response.onNext(Ack.getDefaultInstance());
      response.onCompleted();
    }
  }
}
