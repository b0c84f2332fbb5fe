package io.sparkps.spark;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.coord.CoordinatorClient;
import java.io.Serializable;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.BarrierTaskContext;
import scala.Tuple2;
import scala.collection.JavaConverters;
import scala.runtime.AbstractFunction1;

/**
 * The body of one worker task in the barrier stage: registers, meets the other workers
 * ({@link BarrierSync}), runs the user's function with a ps client and a progress reporter, and
 * returns (index, result). A failure is reported to the coordinator with its stack, then rethrown
 * so that Spark retries the stage.
 */
final class WorkerTask<T, R> extends AbstractFunction1<scala.collection.Iterator<T>, scala.collection.Iterator<Tuple2<Object, Object>>>
    implements Serializable {
  private static final long serialVersionUID = 1L;
  private final TaskEnv env;
  private final WorkerFunction<T, R> function;

  WorkerTask(TaskEnv env, WorkerFunction<T, R> function) {
    this.env = env;
    this.function = function;
  }

  @Override
  public scala.collection.Iterator<Tuple2<Object, Object>> apply(scala.collection.Iterator<T> rows) {
    BarrierTaskContext context = BarrierTaskContext.get();
    int index = context.partitionId();
    int attempt = context.stageAttemptNumber();
    Role role = Role.ofWorker(index);
    String host = ExecutorHost.get();
    try (CoordinatorClient coordinator = env.coordinatorClient()) {
      try (Heartbeats progress = new Heartbeats(coordinator, role, index, attempt, env.spec().heartbeatInterval(),
               Integer.MAX_VALUE, env.spec().metricsEvery())) {
        // The reply says where each ps serves now: one may have been replaced since the run began.
        List<String> psNow = coordinator.register(TaskEnv.registration(role, index, host, 0, attempt))
            .getPsAddressesList();
        try (PsClient ps = env.psClient(index, psNow, coordinator, progress, true, attempt)) {
          R result;
          try {
            BarrierSync.Sync sync = BarrierSync.rendezvous(context, coordinator, env.spec().rendezvousTimeout(),
                env.spec().numWorkers(), env.spec().syncWaitTimeout());
            result = function.run(new Context<>(role, index, env.spec().numWorkers(), attempt, host,
                List.copyOf(psNow), JavaConverters.asJavaIterator(rows), ps, progress, sync::user));
            progress.finished();
            sync.finish();
          } catch (Exception | Error e) {
            // The attempt ends early: this worker's copy outlives the task, for the next attempt's chief.
            KeptCopies.keep(env.runId(), attempt, ps, env);
            throw e;
          }
          List<Tuple2<Object, Object>> out = List.of(new Tuple2<>(index, result));
          return JavaConverters.asScalaIterator(out.iterator());
        }
      } catch (Exception | Error e) {
        TaskEnv.report(coordinator, role, index, host, attempt, e);
        throw new IllegalStateException(role.name().toLowerCase() + " " + index + " on " + host + " (stage attempt " + attempt + ") failed: " + e, e);
      }
    }
  }

  /** The context handed to the user's function. */
  record Context<T>(Role role, int index, int numWorkers, int stageAttempt, String host, List<String> psAddresses,
      Iterator<T> data, PsClient ps, ProgressReporter progress, Runnable barrierCall) implements WorkerContext<T> {
    @Override
    public void barrier() {
      barrierCall.run();
    }
  }
}
