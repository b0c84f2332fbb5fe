package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.HeartbeatRequest;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;

/** What tasks tell a {@link Registry} (registrations, heartbeats, suspicions), for tests outside its package. */
public final class RegistryDriver {
  private final Registry registry;

  public RegistryDriver(Registry registry) {
    this.registry = registry;
  }

  /** Registers {@code role} {@code index} of stage attempt {@code attempt} at {@code host:port} on {@code executor}. */
  public void register(Role role, int index, int attempt, String host, int port, String executor, long taskId) {
    registry.register(Registration.newBuilder().setRole(role).setIndex(index).setHost(host).setPort(port)
        .setAttempt(attempt).setExecutorId(executor).setTaskId(taskId).build());
  }

  /** A heartbeat of {@code role} {@code index} at {@code step}. */
  public void beat(Role role, int index, int attempt, long step) {
    registry.heartbeat(HeartbeatRequest.newBuilder().setRole(role).setIndex(index).setAttempt(attempt)
        .setProgress(Progress.newBuilder().setStep(step)).build());
  }

  /** A heartbeat of {@code role} {@code index} carrying one record: step {@code step} with {@code metrics}. */
  public void record(Role role, int index, int attempt, long step, java.util.Map<String, Double> metrics) {
    Progress p = Progress.newBuilder().setStep(step).putAllMetrics(metrics).setTimeMillis(System.currentTimeMillis())
        .build();
    registry.heartbeat(HeartbeatRequest.newBuilder().setRole(role).setIndex(index).setAttempt(attempt)
        .setProgress(p).addRecords(p).build());
  }

  /** Worker {@code worker} refilled ps {@code index} at {@code step} from {@code source}. */
  public void refilled(int index, int worker, long step, String source) {
    registry.recovered(index, worker, step, source);
  }

  /** The last heartbeat of {@code role} {@code index}: its work is done. */
  public void finish(Role role, int index, int attempt) {
    registry.heartbeat(HeartbeatRequest.newBuilder().setRole(role).setIndex(index).setAttempt(attempt)
        .setFinished(true).build());
  }

  /** A client found ps {@code index} at {@code address} unreachable and asked where it serves (at once). */
  public String suspect(int index, String address) throws InterruptedException {
    return registry.awaitPs(index, address, 0, () -> false);
  }
}
