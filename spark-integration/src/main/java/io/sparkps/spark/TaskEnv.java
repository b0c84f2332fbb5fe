package io.sparkps.spark;

import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.WireErrors;
import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.recovery.CoordinatorRecovery;
import io.sparkps.spark.recovery.Failures;
import java.io.Serializable;
import java.util.List;

/**
 * What every task of a run is shipped: the spec, where the coordinator and the ps shards are, the
 * token, and the run's TLS identity (null when the run is plaintext). {@code runId} names the run
 * (its job groups', and the key of the copies executors keep for it, {@link KeptCopies}).
 */
record TaskEnv(ClusterSpec spec, String runId, String coordinator, PsToken token, PsTls tls, List<String> psAddresses)
    implements Serializable {
  /** Heartbeats that may fail in a row before a long-running task takes the driver for gone. */
  static final int MAX_MISSED_HEARTBEATS = 30;

  CoordinatorClient coordinatorClient() {
    return new CoordinatorClient(coordinator, token, tls, spec.callTimeout());
  }

  /** A client of the run's ps shards at {@code addresses}, with its token and TLS. */
  PsClient.Builder psClientBuilder(List<String> addresses) {
    PsClient.Builder b = PsClient.builder().setShards(addresses).setToken(token).optBf16Transfers(spec.bf16Transfers());
    return tls == null ? b : b.optTls(tls);
  }

  /** A ps of the run, with its token and TLS. */
  ParameterServer.Builder psServer(int index) {
    ParameterServer.Builder b = ParameterServer.builder().setShardIndex(index).setToken(token);
    return tls == null ? b : b.optTls(tls);
  }

  PsClient psClient(int worker) {
    return psClientBuilder(psAddresses).optWorker(worker)
        .optCallTimeout(spec.callTimeout()).optWaitTimeout(spec.syncWaitTimeout()).build();
  }

  /**
   * A client of the ps shards at {@code addresses} (where they serve now) that moves to a lost
   * shard's replacement (refilling it when {@code refills}) and drops calls to shards the driver
   * declares lost as {@code heartbeats} learn of them.
   */
  PsClient psClient(int worker, List<String> addresses, CoordinatorClient coordinator, Heartbeats heartbeats,
      boolean refills, int attempt) {
    // Noticing a hung ps takes up to roleTimeout; its replacement then has psStartTimeout to register.
    CoordinatorRecovery recovery = new CoordinatorRecovery(coordinator, worker,
        spec.roleTimeout().plus(spec.psStartTimeout()), refills, attempt);
    // Workers only (the evaluator reads dense); a pull may bring every worker's updates of a round.
    double density = worker < spec.numWorkers() ? spec.sparseDensity() : 0;
    PsClient client = psClientBuilder(addresses.isEmpty() ? psAddresses : addresses)
        .optSparseTransfers(density, Math.min(1, density * spec.numWorkers())).optWorker(worker).optCallTimeout(spec.callTimeout()).optWaitTimeout(spec.syncWaitTimeout())
        .optRecovery(recovery).build();
    heartbeats.onLostPs(client::dropShard);
    return client;
  }

  /** A registration of this task (its executor, Spark task id and process id filled in). */
  static io.sparkps.spark.coord.proto.Registration registration(Role role, int index, String host, int port,
      int attempt) {
    org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
    io.sparkps.spark.coord.proto.Registration.Builder b = io.sparkps.spark.coord.proto.Registration.newBuilder()
        .setRole(io.sparkps.spark.coord.proto.Role.valueOf(role.name())).setIndex(index).setHost(host).setPort(port)
        .setAttempt(attempt).setExecutorId(ExecutorHost.executorId())
        .setTaskId(task == null ? -1 : task.taskAttemptId()).setPid(ProcessHandle.current().pid());
    if (task != null) {
      b.setCpus(task.cpus());
      new java.util.TreeMap<>(task.resourcesJMap()).forEach((name, info) -> b.addResources(
          io.sparkps.spark.coord.proto.HeldResource.newBuilder().setName(name)
              .addAllAddresses(java.util.Arrays.asList(info.addresses()))));
    }
    return b.build();
  }

  TaskEnv withPs(List<String> addresses) {
    return new TaskEnv(spec, runId, coordinator, token, tls, List.copyOf(addresses));
  }

  static void report(CoordinatorClient coordinator, Role role, int index, String host, int attempt, Throwable t) {
    coordinator.reportFailure(FailureReport.newBuilder().setRole(io.sparkps.spark.coord.proto.Role.valueOf(role.name()))
        .setIndex(index).setHost(host).setAttempt(attempt).setError(WireErrors.toProto(t))
        .setDeterministic(!Failures.isTransient(t)).build());
  }
}
