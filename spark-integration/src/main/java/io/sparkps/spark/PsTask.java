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
 * cancelled (which interrupts it). It closes its server on every path. Each ps runs in a job of
 * its own, so that the driver can replace one that was lost.
 */
final class PsTask implements VoidFunction<Iterator<Integer>> {
  private static final long serialVersionUID = 1L;

  /** Attempt numbers per driver launch: launch l's Spark attempts are l * 100 + 0, 1, .... */
  static final int ATTEMPTS_PER_LAUNCH = 100;

  private final TaskEnv env;
  private final int launch;

  /** The task of a ps whose index is its one element; {@code launch} counts the driver's launches of it (0 first). */
  PsTask(TaskEnv env, int launch) {
    this.env = env;
    this.launch = launch;
  }

  @Override
  public void call(Iterator<Integer> shard) throws Exception {
    int index = shard.next();
    // Attempts number the ps's incarnations: Spark's retries of one launch, then the driver's relaunches.
    int attempt = launch * ATTEMPTS_PER_LAUNCH + TaskContext.get().attemptNumber();
    String host = ExecutorHost.get();
    try (CoordinatorClient coordinator = env.coordinatorClient()) {
      // A few bulk connections per client: the workers, the evaluator, the driver's own calls.
      int bulkConnections = Math.max(16, 4 * (env.spec().numWorkers() + 2));
      long maxElements = SparkPsConf.PS_MAX_VARIABLE_ELEMENTS.get(SparkEnv.get().conf());
      try (ParameterServer ps = env.psServer(index).optHost(host)
              .optMaxBulkConnections(bulkConnections).optMaxVariableElements(maxElements).build().start();
           Heartbeats heartbeats = new Heartbeats(coordinator, Role.PS, index, attempt, env.spec().heartbeatInterval(),
               TaskEnv.MAX_MISSED_HEARTBEATS)) {
        try {
          coordinator.register(TaskEnv.registration(Role.PS, index, host, ps.port(), attempt));
        } catch (io.grpc.StatusRuntimeException e) {
          if (e.getStatus().getCode() == io.grpc.Status.Code.FAILED_PRECONDITION) {
            return; // a late retry of a launch the driver replaced (and cancelled): nothing to serve, nothing failed
          }
          throw e;
        }
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
