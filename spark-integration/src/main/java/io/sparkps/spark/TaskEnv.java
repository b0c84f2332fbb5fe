package io.sparkps.spark;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.PsToken;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.proto.FailureReport;
import java.io.Serializable;
import java.util.List;

/** What every task of a run is shipped: the spec, where the coordinator and the ps shards are, and the token. */
record TaskEnv(ClusterSpec spec, String coordinator, PsToken token, List<String> psAddresses) implements Serializable {
  /** Heartbeats that may fail in a row before a long-running task takes the driver for gone. */
  static final int MAX_MISSED_HEARTBEATS = 30;

  CoordinatorClient coordinatorClient() {
    return new CoordinatorClient(coordinator, token, spec.callTimeout());
  }

  PsClient psClient(int worker) {
    return PsClient.builder().setShards(psAddresses).setToken(token).optWorker(worker)
        .optCallTimeout(spec.callTimeout()).optWaitTimeout(spec.syncWaitTimeout()).build();
  }

  TaskEnv withPs(List<String> addresses) {
    return new TaskEnv(spec, coordinator, token, List.copyOf(addresses));
  }

  static void report(CoordinatorClient coordinator, Role role, int index, String host, int attempt, Throwable t) {
    coordinator.reportFailure(FailureReport.newBuilder().setRole(io.sparkps.spark.coord.proto.Role.valueOf(role.name()))
        .setIndex(index).setHost(host).setAttempt(attempt).setError(RemoteErrors.toProto(t))
        .setDeterministic(!Failures.isTransient(t)).build());
  }
}
