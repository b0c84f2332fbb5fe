package io.sparkps.ps.grpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.sparkps.ps.grpc.proto.AwaitInitializedRequest;
import io.sparkps.ps.grpc.proto.CreateReply;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.EchoMessage;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.grpc.proto.HelloReply;
import io.sparkps.ps.grpc.proto.HelloRequest;
import io.sparkps.ps.grpc.proto.ListVariablesReply;
import io.sparkps.ps.grpc.proto.ListVariablesRequest;
import io.sparkps.ps.grpc.proto.OptimizerState;
import io.sparkps.ps.grpc.proto.OptimizerStateRequest;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.ShutdownRequest;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.annotation.Internal;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Asynchronous calls to one shard. Every call carries a deadline; waits get theirs extended by
 * the wait's own bound. The stub does not own its channel.
 */
@Internal
public final class ShardStub {
  private final int index;
  private final String address;
  private final Channel channel;
  private final Duration callTimeout;
  private final MethodDescriptor<Frame, UpdateReply> update;
  private final MethodDescriptor<Frame, UpdateReply> updateStream;

  /** Calls to shard {@code index} at {@code address} over {@code channel}. */
  public ShardStub(int index, String address, Channel channel, Duration callTimeout) {
    this.index = index;
    this.address = address;
    this.channel = channel;
    this.callTimeout = callTimeout;
    FrameMarshaller frames = new FrameMarshaller((h, p, n) -> {
      throw new IllegalStateException("clients do not receive update frames");
    });
    this.update = PsMethods.update(frames, false);
    this.updateStream = PsMethods.update(frames, true);
  }

  /** "ps 1 (host:port)", for messages. */
  public String describe() {
    return "ps " + index + " (" + address + ")";
  }

  /** The address this stub calls. */
  public String address() {
    return address;
  }

  /** The shard's index. */
  public int index() {
    return index;
  }

  /**
   * Waits for a call of this stub as {@code join()} would (its failure as a
   * {@code CompletionException} around the call's status), but at most {@code bound} plus a margin
   * (then DEADLINE_EXCEEDED), and an interrupt of the waiting thread (a client closing its
   * executor) cancels the call and ends the wait (CANCELLED).
   */
  public static <T> T await(CompletableFuture<T> call, Duration bound) {
    try {
      return call.get(bound.plusSeconds(10).toNanos(), TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new java.util.concurrent.CompletionException(e.getCause());
    } catch (java.util.concurrent.TimeoutException e) {
      call.cancel(true);
      throw new java.util.concurrent.CompletionException(Status.DEADLINE_EXCEEDED
          .withDescription("no answer within " + bound.plusSeconds(10).toMillis() + " ms").asRuntimeException());
    } catch (InterruptedException e) {
      call.cancel(true);
      Thread.currentThread().interrupt();
      throw new java.util.concurrent.CompletionException(Status.CANCELLED
          .withDescription("the wait was interrupted: the client is closing").withCause(e).asRuntimeException());
    }
  }

  /** Creates groups and variable slices. */
  public CompletableFuture<CreateReply> create(CreateRequest request) {
    return unary(PsMethods.CREATE, request, callTimeout);
  }

  /** Waits on the server until the variables are initialized, at most {@code wait}. */
  public CompletableFuture<?> awaitInitialized(List<String> names, Duration wait) {
    return unary(PsMethods.AWAIT_INITIALIZED, AwaitInitializedRequest.newBuilder().addAllNames(names)
        .setTimeoutMs(wait.toMillis()).build(), wait.plus(callTimeout));
  }

  /** Everything this shard holds. */
  public CompletableFuture<ListVariablesReply> list() {
    return unary(PsMethods.LIST_VARIABLES, ListVariablesRequest.getDefaultInstance(), callTimeout);
  }

  /** Writes a snapshot. */
  public CompletableFuture<SnapshotReply> snapshot(String path) {
    return snapshot(path, callTimeout);
  }

  /** Writes a snapshot, with {@code deadline} (a large shard takes longer than an ordinary call). */
  public CompletableFuture<SnapshotReply> snapshot(String path, Duration deadline) {
    return snapshot(path, false, deadline);
  }

  /** Writes a snapshot; {@code whole}: every table whole, outside the checkpoints' chain (an export). */
  public CompletableFuture<SnapshotReply> snapshot(String path, boolean whole, Duration deadline) {
    return unary(PsMethods.SNAPSHOT, SnapshotRequest.newBuilder().setPath(path).setWhole(whole).build(), deadline);
  }

  /** The optimizer state of a range of one slice's elements. */
  public CompletableFuture<OptimizerState> readOptimizerState(OptimizerStateRequest request) {
    return unary(PsMethods.READ_OPTIMIZER_STATE, request, callTimeout);
  }

  /** Restores the optimizer state of a range of a slice not initialized yet (its refill's first part). */
  public CompletableFuture<UpdateReply> restoreOptimizerState(OptimizerState state) {
    return unary(PsMethods.RESTORE_OPTIMIZER_STATE, state, callTimeout);
  }

  /** Restores a snapshot. */
  public CompletableFuture<SnapshotReply> restore(String path) {
    return restore(SnapshotRequest.newBuilder().setPath(path).build());
  }

  /** Restores (or only checks) a snapshot as the request says. */
  public CompletableFuture<SnapshotReply> restore(SnapshotRequest request) {
    return restore(request, callTimeout);
  }

  /** Restores (or only checks) a snapshot as the request says, with {@code deadline}. */
  public CompletableFuture<SnapshotReply> restore(SnapshotRequest request, Duration deadline) {
    return unary(PsMethods.RESTORE, request, deadline);
  }

  /** The shard's identity and bulk port. */
  public CompletableFuture<HelloReply> hello() {
    return unary(PsMethods.HELLO, HelloRequest.getDefaultInstance(), callTimeout);
  }

  /** A plain protobuf round trip (diagnostics and benchmarks). */
  public CompletableFuture<EchoMessage> echo(EchoMessage message) {
    return unary(PsMethods.ECHO, message, callTimeout);
  }

  /** Creates an embedding table's share on this shard (a table that exists with the same spec is kept). */
  public CompletableFuture<CreateReply> createEmbedding(EmbeddingSpecProto spec) {
    return unary(PsMethods.CREATE_EMBEDDING, spec, callTimeout);
  }

  /** Rows of ids this shard holds of several tables, in one call. */
  public CompletableFuture<EmbeddingRowsBatch> pullEmbeddings(EmbeddingPullBatch request) {
    return unary(PsMethods.PULL_EMBEDDINGS, request, callTimeout);
  }

  /** Row gradients for ids this shard holds of several tables, in one call. */
  public CompletableFuture<UpdateReply> pushEmbeddings(EmbeddingPushBatch request) {
    return unary(PsMethods.PUSH_EMBEDDINGS, request, callTimeout);
  }

  /** Asks the shard to stop. */
  public CompletableFuture<?> shutdown() {
    return unary(PsMethods.SHUTDOWN, ShutdownRequest.getDefaultInstance(), callTimeout);
  }

  /** Sends frames (one as a unary call, several as a flow-controlled stream) and returns the reply. */
  public CompletableFuture<UpdateReply> update(List<Frame> frames) {
    if (frames.size() == 1) {
      return unary(update, frames.get(0), callTimeout);
    }
    ClientCall<Frame, UpdateReply> call = channel.newCall(updateStream, options(callTimeout));
    ReplyListener<UpdateReply> listener = new ReplyListener<>();
    Pump pump = new Pump(call, frames);
    listener.onReady = pump::run;
    call.start(listener, new Metadata());
    call.request(1);
    pump.run();
    return listener.result;
  }

  /** Pulls; each frame goes to {@code sink} as it arrives. The read may wait up to {@code wait}. */
  public CompletableFuture<Frame> pull(PullRequest request, FrameMarshaller.Sink sink, Duration wait) {
    ClientCall<PullRequest, Frame> call = channel.newCall(PsMethods.pull(new FrameMarshaller(sink)),
        options(wait.plus(callTimeout)));
    ReplyListener<Frame> listener = new ReplyListener<>();
    call.start(listener, new Metadata());
    call.request(Integer.MAX_VALUE);
    call.sendMessage(request);
    call.halfClose();
    return listener.result;
  }

  private <Q, R> CompletableFuture<R> unary(MethodDescriptor<Q, R> method, Q request, Duration deadline) {
    ClientCall<Q, R> call = channel.newCall(method, options(deadline));
    ReplyListener<R> listener = new ReplyListener<>();
    call.start(listener, new Metadata());
    call.request(2);
    call.sendMessage(request);
    call.halfClose();
    return listener.result;
  }

  private static CallOptions options(Duration deadline) {
    return CallOptions.DEFAULT.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Completes {@link #result} with the last message when the call closes OK. */
  private static final class ReplyListener<R> extends ClientCall.Listener<R> {
    final CompletableFuture<R> result = new CompletableFuture<>();
    volatile Runnable onReady;
    private R last;

    @Override
    public void onMessage(R message) {
      last = message;
    }

    @Override
    public void onReady() {
      Runnable r = onReady;
      if (r != null) {
        r.run();
      }
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      if (status.isOk()) {
        result.complete(last);
      } else {
        result.completeExceptionally(status.asRuntimeException(trailers));
      }
    }
  }

  /** Sends frames while the transport is ready, then half-closes. */
  private static final class Pump implements Runnable {
    private final ClientCall<Frame, ?> call;
    private final List<Frame> frames;
    private int next;
    private boolean done;

    Pump(ClientCall<Frame, ?> call, List<Frame> frames) {
      this.call = call;
      this.frames = frames;
    }

    @Override
    public synchronized void run() {
      while (!done && next < frames.size() && call.isReady()) {
        call.sendMessage(frames.get(next++));
      }
      if (!done && next == frames.size()) {
        done = true;
        call.halfClose();
      }
    }
  }
}
