package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Role;

/** A role instance's latest state, as the coordinator knows it. */
public record Member(Role role, int index, String host, int port, int attempt, String executorId,
    Progress progress, long lastSeenNanos, long taskId, long pid, boolean finished) {
  Member seen(Progress p, boolean done, long now) {
    return new Member(role, index, host, port, attempt, executorId, p, now, taskId, pid, finished || done);
  }

  /** This instance as it reported {@code p} (a record of its history). */
  Member with(Progress p) {
    return new Member(role, index, host, port, attempt, executorId, p, lastSeenNanos, taskId, pid, finished);
  }

  /** {@code host:port}. */
  public String address() {
    return host + ":" + port;
  }
}
