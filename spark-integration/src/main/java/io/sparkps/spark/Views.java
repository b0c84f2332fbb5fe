package io.sparkps.spark;

import io.sparkps.spark.coord.Member;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.FailureReport;
import java.util.ArrayList;
import java.util.List;

/** The public views of what the coordinator's registry holds. */
final class Views {
  private Views() {}

  static TaskProgress of(Member m, long now) {
    return new TaskProgress(Role.valueOf(m.role().name()), m.index(), m.host(), m.executorId(), m.attempt(), m.progress().getStep(),
        m.progress().getExamples(), m.progress().getMetricsMap(), m.progress().getMessage(),
        (now - m.lastSeenNanos()) / 1_000_000L, m.progress().getTimeMillis());
  }

  static List<TaskProgress> progress(Registry registry) {
    long now = System.nanoTime();
    return registry.members().stream().map(m -> of(m, now)).toList();
  }

  static List<TaskProgress> history(Registry registry, Role role) {
    long now = System.nanoTime();
    return registry.history().stream().filter(m -> m.role().name().equals(role.name())).map(m -> of(m, now)).toList();
  }

  static List<TaskProgress> workerHistory(Registry registry) {
    long now = System.nanoTime();
    return registry.history().stream().filter(m -> m.role().name().equals("CHIEF") || m.role().name().equals("WORKER"))
        .map(m -> of(m, now)).toList();
  }

  /** Attempts of the barrier stage, from the attempts the workers registered with. */
  static int stageAttempts(Registry registry) {
    return 1 + registry.members().stream().filter(m -> m.role().name().equals("CHIEF") || m.role().name().equals("WORKER"))
        .mapToInt(Member::attempt).max().orElse(0);
  }

  /**
   * Each attempt of the barrier stage and what ended it: its first worker failure, or a failure
   * Spark saw (a lost executor) when a later attempt started without one; the last attempt is
   * ended by {@code lastCause} (null when it completed or still runs).
   */
  static List<RunRecord.StageAttempt> stageAttemptList(Registry registry, String lastCause) {
    int last = stageAttempts(registry) - 1;
    List<RunRecord.StageAttempt> out = new ArrayList<>();
    for (int a = 0; a <= last; a++) {
      FailureReport f = registry.firstWorkerFailure(a);
      String cause = f != null ? f.getRole().name().toLowerCase() + " " + f.getIndex() + " on " + f.getHost() + ": "
          + firstLine(RemoteErrors.fromProto(f.getError()).getMessage())
          : a < last ? "a failure Spark saw (a lost executor?)" : null;
      out.add(new RunRecord.StageAttempt(a, a == last && cause == null ? lastCause : cause));
    }
    return out;
  }

  private static String firstLine(String s) {
    return s == null ? "" : s.lines().findFirst().orElse("");
  }

  /** Worker failures that a later stage attempt recovered from. */
  static List<String> recovered(Registry registry) {
    List<String> out = new ArrayList<>();
    for (FailureReport f : registry.failures()) {
      out.add(f.getRole().name().toLowerCase() + " " + f.getIndex() + " on " + f.getHost() + " (attempt " + f.getAttempt()
          + "): " + RemoteErrors.fromProto(f.getError()).getMessage());
    }
    return out;
  }
}
