package io.sparkps.ps.grpc;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import io.sparkps.ps.grpc.proto.AwaitInitializedReply;
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
import io.sparkps.ps.grpc.proto.ShutdownReply;
import io.sparkps.ps.grpc.proto.ShutdownRequest;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.annotation.Internal;

/**
 * The method descriptors of {@code sparkps.ps.v1.ParameterService}. Control calls use protobuf
 * marshallers; Update, UpdateStream and Pull carry {@link Frame}s. The client builds its own
 * Pull descriptor per call, whose response marshaller writes into that call's destination.
 */
@Internal
public final class PsMethods {
  static final String SERVICE = "sparkps.ps.v1.ParameterService";
  /** Frame payloads stay below this by default (1 MiB); see {@code PsClient.Builder#optChunkBytes}. */
  static final int DEFAULT_CHUNK_BYTES = 1 << 20;
  /** Inbound limit of clients: far above any frame, so gRPC's 4 MiB default is never in play. */
  static final int MAX_MESSAGE_BYTES = 256 << 20;
  /**
   * Inbound limit of a ps: the largest frame a client sends (64 MiB of payload, the most
   * {@code chunkBytes} allows) and its header, which gRPC refuses beyond this before buffering it.
   */
  public static final int MAX_SERVER_MESSAGE_BYTES = 80 << 20;

  static final MethodDescriptor<CreateRequest, CreateReply> CREATE =
      unary("Create", CreateRequest.getDefaultInstance(), CreateReply.getDefaultInstance());
  static final MethodDescriptor<AwaitInitializedRequest, AwaitInitializedReply> AWAIT_INITIALIZED =
      unary("AwaitInitialized", AwaitInitializedRequest.getDefaultInstance(),
          AwaitInitializedReply.getDefaultInstance());
  static final MethodDescriptor<ListVariablesRequest, ListVariablesReply> LIST_VARIABLES =
      unary("ListVariables", ListVariablesRequest.getDefaultInstance(), ListVariablesReply.getDefaultInstance());
  static final MethodDescriptor<SnapshotRequest, SnapshotReply> SNAPSHOT =
      unary("Snapshot", SnapshotRequest.getDefaultInstance(), SnapshotReply.getDefaultInstance());
  static final MethodDescriptor<SnapshotRequest, SnapshotReply> RESTORE =
      unary("Restore", SnapshotRequest.getDefaultInstance(), SnapshotReply.getDefaultInstance());
  static final MethodDescriptor<HelloRequest, HelloReply> HELLO =
      unary("Hello", HelloRequest.getDefaultInstance(), HelloReply.getDefaultInstance());
  static final MethodDescriptor<EchoMessage, EchoMessage> ECHO =
      unary("Echo", EchoMessage.getDefaultInstance(), EchoMessage.getDefaultInstance());
  static final MethodDescriptor<ShutdownRequest, ShutdownReply> SHUTDOWN =
      unary("Shutdown", ShutdownRequest.getDefaultInstance(), ShutdownReply.getDefaultInstance());

  static final MethodDescriptor<EmbeddingSpecProto, CreateReply> CREATE_EMBEDDING =
      unary("CreateEmbedding", EmbeddingSpecProto.getDefaultInstance(), CreateReply.getDefaultInstance());
  static final MethodDescriptor<EmbeddingPullBatch, EmbeddingRowsBatch> PULL_EMBEDDINGS =
      unary("PullEmbeddings", EmbeddingPullBatch.getDefaultInstance(), EmbeddingRowsBatch.getDefaultInstance());
  static final MethodDescriptor<EmbeddingPushBatch, UpdateReply> PUSH_EMBEDDINGS =
      unary("PushEmbeddings", EmbeddingPushBatch.getDefaultInstance(), UpdateReply.getDefaultInstance());

  static final MethodDescriptor<OptimizerStateRequest, OptimizerState> READ_OPTIMIZER_STATE =
      unary("ReadOptimizerState", OptimizerStateRequest.getDefaultInstance(), OptimizerState.getDefaultInstance());
  static final MethodDescriptor<OptimizerState, UpdateReply> RESTORE_OPTIMIZER_STATE =
      unary("RestoreOptimizerState", OptimizerState.getDefaultInstance(), UpdateReply.getDefaultInstance());

  private PsMethods() {}

  static MethodDescriptor<Frame, UpdateReply> update(FrameMarshaller frames, boolean streaming) {
    return MethodDescriptor.<Frame, UpdateReply>newBuilder()
        .setType(streaming ? MethodType.CLIENT_STREAMING : MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, streaming ? "UpdateStream" : "Update"))
        .setRequestMarshaller(frames)
        .setResponseMarshaller(ProtoUtils.marshaller(UpdateReply.getDefaultInstance()))
        .build();
  }

  static MethodDescriptor<PullRequest, Frame> pull(FrameMarshaller frames) {
    return MethodDescriptor.<PullRequest, Frame>newBuilder()
        .setType(MethodType.SERVER_STREAMING)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Pull"))
        .setRequestMarshaller(ProtoUtils.marshaller(PullRequest.getDefaultInstance()))
        .setResponseMarshaller(frames)
        .build();
  }

  private static <Q extends Message, R extends Message> MethodDescriptor<Q, R> unary(
      String name, Q request, R response) {
    return MethodDescriptor.<Q, R>newBuilder()
        .setType(MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
        .setRequestMarshaller(ProtoUtils.marshaller(request))
        .setResponseMarshaller(ProtoUtils.marshaller(response))
        .build();
  }
}
