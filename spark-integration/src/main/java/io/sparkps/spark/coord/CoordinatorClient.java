package io.sparkps.spark.coord;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sparkps.ps.client.RunChannels;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.spark.coord.proto.AwaitWorkersRequest;
import io.sparkps.spark.coord.proto.CoordinatorGrpc;
import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.coord.proto.HeartbeatRequest;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** A task's connection to the coordinator; every call has a deadline. It owns its channel. */
public final class CoordinatorClient implements AutoCloseable {
  private final ManagedChannel channel;
  private final CoordinatorGrpc.CoordinatorBlockingStub stub;
  private final Duration callTimeout;

  /** A client of the coordinator at {@code host:port}, over TLS pinned to {@code tls} unless it is null. */
  public CoordinatorClient(String address, PsToken token, PsTls tls, Duration callTimeout) {
    int colon = address.lastIndexOf(':');
    this.channel = RunChannels.secured(NettyChannelBuilder.forAddress(address.substring(0, colon),
        Integer.parseInt(address.substring(colon + 1))), tls).intercept(RunChannels.tokenOnEveryCall(token)).build();
    this.stub = CoordinatorGrpc.newBlockingStub(channel);
    this.callTimeout = callTimeout;
  }

  private CoordinatorGrpc.CoordinatorBlockingStub stub(Duration deadline) {
    return stub.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Announces a role instance. */
  public void register(Role role, int index, String host, int port, int attempt, String executorId) {
    register(Registration.newBuilder().setRole(role).setIndex(index).setHost(host).setPort(port)
        .setAttempt(attempt).setExecutorId(executorId == null ? "" : executorId).build());
  }

  /** Announces a role instance; a worker learns where each ps serves now. */
  public io.sparkps.spark.coord.proto.RegisterReply register(Registration registration) {
    return stub(callTimeout).register(registration);
  }

  /**
   * Where ps {@code index}, lost at {@code lost}, serves now: its replacement's address, "" when it
   * still serves at {@code lost}. Waits at most {@code timeout} (then DEADLINE_EXCEEDED naming the ps).
   */
  public String awaitPs(int index, String lost, Duration timeout) {
    return stub(timeout.plus(callTimeout)).awaitPs(io.sparkps.spark.coord.proto.AwaitPsRequest.newBuilder()
        .setIndex(index).setLostAddress(lost).setTimeoutMs(timeout.toMillis()).build()).getAddress();
  }

  /**
   * Waits at most {@code timeout} for the chief of the attempt after {@code attempt} to ask for
   * lost ps to be refilled from the copies kept since {@code attempt} (see {@link Registry#awaitRefill}).
   */
  public io.sparkps.spark.coord.proto.AwaitRefillReply awaitRefill(int attempt, Duration timeout) {
    return stub(timeout.plus(callTimeout)).awaitRefill(io.sparkps.spark.coord.proto.AwaitRefillRequest.newBuilder()
        .setAttempt(attempt).setTimeoutMs(timeout.toMillis()).build());
  }

  /** The chief of stage attempt {@code attempt} asks for {@code shards} to be refilled from copies of the attempt before. */
  public void requestRefill(int attempt, java.util.Collection<Integer> shards) {
    stub(callTimeout).requestRefill(io.sparkps.spark.coord.proto.RefillRequest.newBuilder().setAttempt(attempt)
        .addAllShards(shards).build());
  }

  /** Reports that this worker refilled a replaced ps. */
  public void reportRecovery(int index, int worker, long step, String source) {
    stub(callTimeout).reportRecovery(io.sparkps.spark.coord.proto.RecoveryReport.newBuilder().setIndex(index)
        .setWorker(worker).setStep(step).setSource(source).build());
  }

  /** Sends a heartbeat; the reply says whether to stop and which ps addresses are lost. */
  public io.sparkps.spark.coord.proto.HeartbeatReply beat(HeartbeatRequest request) {
    return stub(callTimeout).heartbeat(request);
  }

  /** Waits until all workers of {@code attempt} registered, at most {@code timeout}. */
  public void awaitWorkers(int attempt, Duration timeout) {
    awaitWorkers(attempt, 0, -1, timeout);
  }

  /** Arrives at barrier {@code phase} (&gt; 0) as worker {@code index} and waits for the others; phase 0 as above. */
  public void awaitWorkers(int attempt, int phase, int index, Duration timeout) {
    stub(timeout.plus(callTimeout)).awaitWorkers(AwaitWorkersRequest.newBuilder().setAttempt(attempt)
        .setTimeoutMs(timeout.toMillis()).setPhase(phase).setIndex(index).build());
  }

  /** Reports progress; returns whether the run is stopping. */
  public boolean heartbeat(Role role, int index, int attempt, Progress progress) {
    return beat(HeartbeatRequest.newBuilder().setRole(role).setIndex(index).setAttempt(attempt)
        .setProgress(progress).build()).getStop();
  }

  /** Reports a failure; never throws (the task is failing already). */
  public void reportFailure(FailureReport report) {
    try {
      stub(callTimeout).reportFailure(report);
    } catch (StatusRuntimeException e) {
      // The driver is gone or unreachable: Spark will report the task failure itself.
    }
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
