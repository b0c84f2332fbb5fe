package io.sparkps.spark;

import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.FailureReport;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.function.IntFunction;

/**
 * Turns a failed run into one exception: the first task failure with its remote stack (its role,
 * index, host and attempt, and why no further attempt was made), or Spark's own error; a failed
 * worker's comes with the means to rerun its function in the driver, on its rows, against
 * in-process ps shards.
 */
final class FailureExplainer<T, R> {
  /** Progress of a recreated worker goes nowhere. */
  private static final ProgressReporter NO_PROGRESS = new ProgressReporter() {
    @Override
    public void report(long step, long examples, Map<String, Double> metrics) {}

    @Override
    public void message(String message) {}
  };

  private final String runId;
  private final ClusterSpec spec;
  private final WorkerFunction<T, R> function;
  private final IntFunction<List<T>> rowsOf;

  /** For run {@code runId}; {@code rowsOf} gives the rows a worker trained on, read again. */
  FailureExplainer(String runId, ClusterSpec spec, WorkerFunction<T, R> function, IntFunction<List<T>> rowsOf) {
    this.runId = runId;
    this.spec = spec;
    this.function = function;
    this.rowsOf = rowsOf;
  }

  /** One exception for a failed run: the first task failure, with its remote stack, or Spark's own error. */
  RuntimeException explain(Throwable t, Registry registry) {
    if (t instanceof TrainingFailure f) {
      return f;
    }
    if (t instanceof ExecutionException e && e.getCause() instanceof TrainingFailure f) {
      return f;
    }
    List<FailureReport> failures = registry.failures().stream()
        .filter(f -> f.getRole() != io.sparkps.spark.coord.proto.Role.EVALUATOR).toList();
    if (failures.isEmpty()) {
      Throwable root = t;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      return new TrainingFailure("the SparkPS run " + runId + " failed before any task reported an error: " + root, null,
          -1, null, -1, t, null);
    }
    FailureReport first = failures.get(0);
    Role role = Role.valueOf(first.getRole().name());
    RemoteException remote = RemoteErrors.fromProto(first.getError());
    long attempts = failures.stream().filter(f -> f.getRole() != io.sparkps.spark.coord.proto.Role.PS)
        .mapToInt(FailureReport::getAttempt).distinct().count();
    String message = role.name().toLowerCase() + " " + first.getIndex() + " on " + first.getHost() + " ("
        + (role == Role.PS ? "task" : "stage") + " attempt " + first.getAttempt() + ") failed: " + remote.getMessage()
        + (first.getDeterministic() && role != Role.PS ? " (not retried: another attempt would meet the same error)"
            : attempts > 1 ? " (the barrier stage failed in " + attempts + " attempts; the last one because "
                + RemoteErrors.lastAttemptFailure(failures) + ")" : "");
    boolean worker = role == Role.CHIEF || role == Role.WORKER;
    return new TrainingFailure(message, role, first.getIndex(), first.getHost(), first.getAttempt(), remote,
        worker ? recreation(first.getIndex(), first.getAttempt()) : null);
  }

  /** Reruns worker {@code index}'s function in the driver, on its partition, against in-process ps shards. */
  private TrainingFailure.Recreation recreation(int index, int attempt) {
    return () -> {
      List<T> rows = rowsOf.apply(index);
      String run = "sparkps-recreate-" + UUID.randomUUID();
      PsToken token = PsToken.generate();
      List<ParameterServer> servers = new ArrayList<>();
      try {
        for (int s = 0; s < spec.numPs(); s++) {
          servers.add(ParameterServer.builder().setShardIndex(s).setToken(token).optInProcess(run + "-" + s).build().start());
        }
        List<String> addresses = servers.stream().map(ParameterServer::address).toList();
        try (PsClient client = PsClient.builder().setShards(addresses).setToken(token).optWorker(index)
            .optCallTimeout(spec.callTimeout()).build()) {
          return function.run(new WorkerTask.Context<>(Role.ofWorker(index), index, spec.numWorkers(), attempt,
              "driver (recreated)", addresses, rows.iterator(), client, NO_PROGRESS, () -> { })); // alone: barriers pass
        }
      } finally {
        servers.forEach(ParameterServer::close);
      }
    };
  }
}
