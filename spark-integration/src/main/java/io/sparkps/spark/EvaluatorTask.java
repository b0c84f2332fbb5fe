package io.sparkps.spark;

import io.sparkps.ps.PsClient;
import io.sparkps.spark.coord.CoordinatorClient;
import java.util.Iterator;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.VoidFunction;

/**
 * The body of the evaluator task: runs the user's evaluator function until the run stops. Its
 * failure is reported to the driver but does not fail the task: training goes on without it.
 */
final class EvaluatorTask implements VoidFunction<Iterator<Integer>> {
  private static final long serialVersionUID = 1L;
  private final TaskEnv env;
  private final EvaluatorFunction function;

  EvaluatorTask(TaskEnv env, EvaluatorFunction function) {
    this.env = env;
    this.function = function;
  }

  @Override
  public void call(Iterator<Integer> ignored) {
    int attempt = TaskContext.get().attemptNumber();
    String host = ExecutorHost.get();
    try (CoordinatorClient coordinator = env.coordinatorClient()) {
      try (Heartbeats progress = new Heartbeats(coordinator, Role.EVALUATOR, 0, attempt, env.spec().heartbeatInterval(),
               TaskEnv.MAX_MISSED_HEARTBEATS);
           PsClient ps = env.psClient(env.spec().numWorkers(),
               coordinator.register(TaskEnv.registration(Role.EVALUATOR, 0, host, 0, attempt)).getPsAddressesList(),
               coordinator, progress, false, -1)) {
        function.run(new Context(ps, progress));
        progress.finished();
      } catch (Exception | Error e) {
        TaskEnv.report(coordinator, Role.EVALUATOR, 0, host, attempt, e);
      }
    }
  }

  /** The context handed to the evaluator function. */
  private record Context(PsClient ps, Heartbeats heartbeats) implements EvaluatorContext {
    @Override
    public ProgressReporter progress() {
      return heartbeats;
    }

    @Override
    public boolean isStopping() {
      return heartbeats.shouldStop() || Thread.currentThread().isInterrupted();
    }
  }
}
