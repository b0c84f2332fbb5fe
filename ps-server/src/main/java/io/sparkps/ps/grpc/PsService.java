package io.sparkps.ps.grpc;

import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.sparkps.ps.grpc.proto.AwaitInitializedReply;
import io.sparkps.ps.grpc.proto.AwaitInitializedRequest;
import io.sparkps.ps.grpc.proto.CreateReply;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.grpc.proto.HelloReply;
import io.sparkps.ps.grpc.proto.HelloRequest;
import io.sparkps.ps.grpc.proto.OptimizerState;
import io.sparkps.ps.grpc.proto.OptimizerStateRequest;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.ShutdownReply;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.server.EmbeddingTables;
import io.sparkps.ps.server.OptimizerStates;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.Snapshots;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.server.Waiters;
import io.sparkps.ps.wire.FloatPool;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.Payload;
import io.sparkps.ps.wire.StatusMapping;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;


/**
 * The gRPC service of one shard: decodes calls, runs them against the {@link ShardStore}, and
 * turns waits into registered conditions so no thread blocks while a SYNC read, an SSP read or
 * an initialization wait is pending. Every wait ends by its timeout or with its call.
 */
@Internal
public final class PsService {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(PsService.class);
  private final ShardStore store;
  private final Updates updates;
  private final Reads reads;
  private final OptimizerStates states;
  private Snapshots snapshots;
  private final Waiters waiters;
  private final EmbeddingTables embeddings;
  private final TableCalls tableCalls;
  private final FloatPool pool;
  private final boolean copyPayloads;
  private final long maxWaitMs;
  private final Runnable onShutdown;
  private final String name;
  private final int bulkPort;
  private final String localId;

  /**
   * A service over {@code store}. {@code copyPayloads} must be set for in-process transports,
   * which hand frames over without serializing them.
   */
  public PsService(ShardStore store, Waiters waiters, TableCalls tableCalls, FloatPool pool, int maxFrameFloats,
      boolean copyPayloads, long maxWaitMs, int bulkPort, String localId, Runnable onShutdown) {
    this.bulkPort = bulkPort;
    this.localId = localId;
    this.store = store;
    this.updates = new Updates(store);
    this.reads = new Reads(store, maxFrameFloats);
    this.states = new OptimizerStates(store);
    this.waiters = waiters;
    this.tableCalls = tableCalls;
    this.embeddings = tableCalls.tables();
    this.pool = pool;
    this.copyPayloads = copyPayloads;
    this.maxWaitMs = maxWaitMs;
    this.onShutdown = onShutdown;
    this.name = "ps " + store.shardIndex();
  }

  /** The service definition to add to a server. */
  public ServerServiceDefinition definition() {
    FrameMarshaller frames = FrameMarshaller.pooled(pool);
    return ServerServiceDefinition.builder(PsMethods.SERVICE)
        .addMethod(PsMethods.CREATE, ServerCalls.asyncUnaryCall((CreateRequest r, StreamObserver<CreateReply> o) ->
            reply(o, () -> CreateReply.newBuilder().setCreated(created(r)).build())))
        .addMethod(PsMethods.AWAIT_INITIALIZED, ServerCalls.asyncUnaryCall(this::awaitInitialized))
        .addMethod(PsMethods.LIST_VARIABLES, ServerCalls.asyncUnaryCall((r, o) -> reply(o, store::list)))
        .addMethod(PsMethods.update(frames, false), ServerCalls.asyncUnaryCall((Frame f, StreamObserver<UpdateReply> o) ->
            applyAndReply(List.of(f), o)))
        .addMethod(PsMethods.update(frames, true), ServerCalls.asyncClientStreamingCall(this::updateStream))
        .addMethod(PsMethods.pull(frames), ServerCalls.asyncServerStreamingCall(this::pull))
        .addMethod(PsMethods.SNAPSHOT, ServerCalls.asyncUnaryCall((SnapshotRequest r, StreamObserver<SnapshotReply> o) ->
            reply(o, () -> io(() -> saved(r)))))
        .addMethod(PsMethods.RESTORE, ServerCalls.asyncUnaryCall((SnapshotRequest r, StreamObserver<SnapshotReply> o) ->
            reply(o, () -> io(() -> {
              SnapshotReply restored = snapshots().restore(r);
              if (!r.getVerifyOnly() && !r.getTablesOnly()) {
                LOG.info("{}: restored {} variables ({} bytes){} from {}", name, restored.getVariables(),
                    restored.getBytes(), restored.getTables() == 0 ? "" : " and " + restored.getTables()
                        + " embedding tables (" + restored.getTableRows() + " rows)", r.getPath());
              }
              return restored;
            }))))
        .addMethod(PsMethods.HELLO, ServerCalls.asyncUnaryCall((HelloRequest r, StreamObserver<HelloReply> o) ->
            reply(o, () -> HelloReply.newBuilder().setShard(store.shardIndex()).setBulkPort(bulkPort)
                .setBulkVersion(1).setLocalId(localId).build())))
        .addMethod(PsMethods.ECHO, ServerCalls.asyncUnaryCall((r, o) -> reply(o, () -> r)))
        .addMethod(PsMethods.CREATE_EMBEDDING, ServerCalls.asyncUnaryCall((EmbeddingSpecProto r,
            StreamObserver<CreateReply> o) -> reply(o, () -> CreateReply.newBuilder().setCreated(
                createdTable(r) ? 1 : 0).build())))
        .addMethod(PsMethods.PULL_EMBEDDINGS, ServerCalls.asyncUnaryCall(this::pullEmbeddings))
        .addMethod(PsMethods.PUSH_EMBEDDINGS, ServerCalls.asyncUnaryCall((EmbeddingPushBatch r,
            StreamObserver<UpdateReply> o) -> reply(o, () -> tableCalls.push(r.getTablesList()))))
        .addMethod(PsMethods.READ_OPTIMIZER_STATE, ServerCalls.asyncUnaryCall((OptimizerStateRequest r,
            StreamObserver<OptimizerState> o) -> reply(o, () -> states.read(r))))
        .addMethod(PsMethods.RESTORE_OPTIMIZER_STATE, ServerCalls.asyncUnaryCall((OptimizerState r,
            StreamObserver<UpdateReply> o) -> reply(o, () -> states.restore(r))))
        .addMethod(PsMethods.SHUTDOWN, ServerCalls.asyncUnaryCall((r, o) -> {
          LOG.info("{}: a client asked it to shut down", name);
          reply(o, ShutdownReply::getDefaultInstance);
          onShutdown.run();
        }))
        .build();
  }

  private int created(CreateRequest request) {
    int created = store.create(request);
    if (created > 0) {
      LOG.info("{}: created {} variable slices ({} floats on this ps now)", name, created, store.elements());
    }
    return created;
  }

  private boolean createdTable(EmbeddingSpecProto spec) {
    boolean created = embeddings.create(spec);
    if (created) {
      LOG.info("{}: created embedding table '{}' of {} dimensions", name, spec.getName(), spec.getDim());
    }
    return created;
  }

  private SnapshotReply saved(SnapshotRequest request) throws IOException {
    long started = System.nanoTime();
    SnapshotReply saved = snapshots().save(request.getPath(), request.getWhole());
    LOG.info("{}: saved {} variables ({} bytes){} to {} in {} ms", name, saved.getVariables(), saved.getBytes(),
        saved.getTables() == 0 ? "" : " and " + saved.getTables() + " embedding tables (" + saved.getTableRows()
            + " rows" + (saved.getTablesIncremental() ? ", changed only)" : ")"),
        request.getPath(), (System.nanoTime() - started) / 1_000_000);
    return saved;
  }

  /** Created on first use, so a server runs without Hadoop on the class path until it snapshots. */
  private synchronized Snapshots snapshots() {
    if (snapshots == null) {
      try {
        snapshots = new Snapshots(store, embeddings);
      } catch (NoClassDefFoundError e) {
        throw Status.FAILED_PRECONDITION.withDescription(name + ": snapshots need Hadoop's client libraries "
            + "(hadoop-client-api and hadoop-client-runtime) on the class path; Spark provides them").asRuntimeException();
      }
    }
    return snapshots;
  }

  private interface IoCall<T> {
    T call() throws IOException;
  }

  private <T> T io(IoCall<T> call) {
    try {
      return call.call();
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription(name + ": " + e).withCause(e).asRuntimeException();
    }
  }

  private static <T> void reply(StreamObserver<T> observer, Supplier<T> body) {
    T result;
    try {
      result = body.get();
    } catch (RuntimeException e) {
      observer.onError(StatusMapping.toStatus(e).asRuntimeException());
      return;
    }
    observer.onNext(result);
    observer.onCompleted();
  }

  private void applyAndReply(List<Frame> frames, StreamObserver<UpdateReply> observer) {
    try {
      for (Frame f : frames) {
        if (f.malformed() != null) {
          observer.onError(io.grpc.Status.INVALID_ARGUMENT.withDescription(f.malformed()).asRuntimeException());
          return;
        }
        if (f.header().getEncoding() != io.sparkps.ps.grpc.proto.WireEncoding.FLOAT32) {
          observer.onError(io.grpc.Status.INVALID_ARGUMENT.withDescription("gRPC update frames carry float32 only; "
              + f.header().getEncoding() + " payloads go over the bulk port (field encoding)").asRuntimeException());
          return;
        }
      }
      List<Payload> payloads = new ArrayList<>(frames.size());
      frames.forEach(f -> payloads.add(new Payload(f.header(), f.data(), f.count(), f.firstNonFinite())));
      reply(observer, () -> updates.apply(payloads));
    } finally {
      frames.forEach(f -> pool.give(f.data()));
    }
  }

  /**
   * An update in several frames, applied at once when the stream completes. Its frames are held
   * until then, so a stream may carry at most as many values as the shard holds (a dense update
   * of everything) plus one frame: more is refused as it arrives, naming the stream's length.
   */
  private StreamObserver<Frame> updateStream(StreamObserver<UpdateReply> observer) {
    List<Frame> frames = new ArrayList<>();
    long limit = store.elements() + PsMethods.MAX_SERVER_MESSAGE_BYTES / 4;
    return new StreamObserver<>() {
      private long values;
      private boolean refused;

      @Override
      public void onNext(Frame frame) {
        values += frame.count();
        if (refused || values > limit) {
          pool.give(frame.data());
          if (!refused) {
            refused = true;
            frames.forEach(f -> pool.give(f.data()));
            frames.clear();
            observer.onError(io.grpc.Status.INVALID_ARGUMENT.withDescription("update stream to ps " + store.shardIndex()
                + " carries more than " + limit + " values (its length), more than this shard holds: send a "
                + "variable's update once per call").asRuntimeException());
          }
          return;
        }
        frames.add(frame);
      }

      @Override
      public void onError(Throwable t) {
        frames.forEach(f -> pool.give(f.data()));
      }

      @Override
      public void onCompleted() {
        if (refused) {
          return;
        }
        if (frames.isEmpty()) {
          reply(observer, UpdateReply::getDefaultInstance);
        } else {
          applyAndReply(frames, observer);
        }
      }
    };
  }

  private void awaitInitialized(AwaitInitializedRequest request, StreamObserver<AwaitInitializedReply> observer) {
    List<String> names = List.copyOf(request.getNamesList());
    long timeout = boundedWait(request.getTimeoutMs());
    bounded(observer, () -> store.uninitialized(names), timeout,
        () -> reply(observer, AwaitInitializedReply::getDefaultInstance),
        missing -> "waited " + timeout + " ms: " + missing
            + "; the chief initializes them: is it running, and did it create the same variables?");
  }

  /**
   * Tables' rows; a training pull of a SYNC or SSP table first waits (bounded) for the other
   * workers, so the reply comes once none of the tables is blocked.
   */
  private void pullEmbeddings(EmbeddingPullBatch batch, StreamObserver<EmbeddingRowsBatch> observer) {
    String blocked;
    try {
      blocked = tableCalls.blocker(batch);
    } catch (RuntimeException e) {
      observer.onError(StatusMapping.toStatus(e).asRuntimeException());
      return;
    }
    if (blocked == null) {
      reply(observer, () -> tableCalls.rows(batch)); // nothing to wait for: answered on this thread, no hand-off
      return;
    }
    long timeout = boundedWait(tableCalls.waitBound(batch));
    bounded(observer, () -> tableCalls.blocker(batch), timeout, () -> reply(observer, () -> tableCalls.rows(batch)),
        missing -> "waited " + timeout + " ms: " + missing);
  }

  private void pull(PullRequest request, StreamObserver<Frame> observer) {
    whenReadable(request, observer, () -> sendPull(request, observer));
  }

  /** Runs {@code onReady} once the pull may be served (SYNC/SSP reads wait), or fails the call. */
  private void whenReadable(PullRequest request, StreamObserver<?> observer, Runnable onReady) {
    try {
      if (request.getEncoding() != io.sparkps.ps.grpc.proto.WireEncoding.FLOAT32) {
        throw io.grpc.Status.INVALID_ARGUMENT.withDescription("gRPC pulls are answered in float32 only; "
            + request.getEncoding() + " values come over the bulk port (field encoding)").asRuntimeException();
      }
      reads.validate(request);
    } catch (RuntimeException e) {
      observer.onError(StatusMapping.toStatus(e).asRuntimeException());
      return;
    }
    long timeout = boundedWait(request.getTimeoutMs());
    bounded(observer, () -> reads.blocker(request), timeout, onReady, missing -> "waited " + timeout + " ms: " + missing);
  }

  private void sendPull(PullRequest request, StreamObserver<Frame> observer) {
    try {
      reads.read(request, (header, parts) -> observer.onNext(Frame.ofFloats(header, copyPayloads ? copy(parts) : parts)));
    } catch (RuntimeException e) {
      observer.onError(StatusMapping.toStatus(e).asRuntimeException());
      return;
    }
    observer.onCompleted();
  }

  private static List<FloatRange> copy(List<FloatRange> parts) {
    List<FloatRange> copies = new ArrayList<>(parts.size());
    for (FloatRange r : parts) {
      copies.add(new FloatRange(Arrays.copyOfRange(r.array(), r.offset(), r.offset() + r.length()), 0, r.length()));
    }
    return copies;
  }

  /** Runs {@code onReady} once {@code blocker} clears, or fails the call after {@code timeoutMs}. */
  private void bounded(StreamObserver<?> observer, Supplier<String> blocker, long timeoutMs,
      Runnable onReady, java.util.function.Function<String, String> timeoutMessage) {
    AtomicReference<Waiters.Wait> wait = new AtomicReference<>();
    ((ServerCallStreamObserver<?>) observer).setOnCancelHandler(() -> {
      Waiters.Wait w = wait.get();
      if (w != null) {
        w.cancel();
      }
    });
    try {
      wait.set(waiters.await(blocker, timeoutMs, onReady, missing -> observer.onError(
          Status.DEADLINE_EXCEEDED.withDescription(name + ": " + timeoutMessage.apply(missing)).asRuntimeException())));
    } catch (RuntimeException e) {
      observer.onError(StatusMapping.toStatus(e).asRuntimeException());
    }
  }

  /** A wait's bound: the request's, capped by the call's deadline and the server's maximum. */
  private long boundedWait(long requestedMs) {
    long bound = requestedMs > 0 ? Math.min(requestedMs, maxWaitMs) : maxWaitMs;
    Deadline deadline = Context.current().getDeadline();
    if (deadline != null) {
      bound = Math.min(bound, Math.max(1, deadline.timeRemaining(TimeUnit.MILLISECONDS)));
    }
    return bound;
  }
}
