package io.sparkps.spark;

import io.sparkps.ps.ParameterServer;
import io.sparkps.spark.coord.CoordinatorClient;
import java.util.Iterator;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.VoidFunction;

/**
 * The body of one ps task: serves its shard on the executor's host, registers with the
 * coordinator, and serves until the coordinator says stop, the driver is gone, or the job is
 * cancelled (which interrupts it). It closes its server on every path.
 */
final class PsTask implements VoidFunction<Iterator<Integer>> {
  private static final long serialVersionUID = 1L;
  /** Fault injection for tests: milliseconds a ps task sleeps before it starts. */
  static final String TEST_START_DELAY = "spark.sparkps.test.psStartDelayMs";

  private final TaskEnv env;

  PsTask(TaskEnv env) {
    this.env = env;
  }

  @Override
  public void call(Iterator<Integer> ignored) throws Exception {
    int index = TaskContext.getPartitionId();
    int attempt = TaskContext.get().attemptNumber();
    String host = ExecutorHost.get();
    long delay = SparkEnv.get().conf().getLong(TEST_START_DELAY, 0);
    if (delay > 0) {
      Thread.sleep(delay);
    }
    try (CoordinatorClient coordinator = env.coordinatorClient()) {
      try (ParameterServer ps = ParameterServer.builder().setShardIndex(index).setToken(env.token()).optHost(host)
              .build().start();
           Heartbeats heartbeats = new Heartbeats(coordinator, Role.PS, index, attempt, env.spec().heartbeatInterval(),
               TaskEnv.MAX_MISSED_HEARTBEATS)) {
        coordinator.register(io.sparkps.spark.coord.proto.Role.PS, index, host, ps.port(), attempt, ExecutorHost.executorId());
        while (!heartbeats.shouldStop() && !ps.awaitTermination(env.spec().heartbeatInterval())) {
          heartbeats.message("serving at " + ps.address() + ", " + ps.pendingWaits() + " waits pending");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception | Error e) {
        TaskEnv.report(coordinator, Role.PS, index, host, attempt, e);
        throw e;
      }
    }
  }
}
