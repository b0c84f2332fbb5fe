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
        (now - m.lastSeenNanos()) / 1_000_000L);
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
