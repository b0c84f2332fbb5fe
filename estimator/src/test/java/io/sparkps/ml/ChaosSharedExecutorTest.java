package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.Consistency;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker and a ps lost together, as when an executor with several cores dies on YARN:
 * {@code local-cluster[3,2,2048]}, 2 workers, 2 ps and an evaluator, ASYNC. The executor holding a
 * worker and a ps is killed (or, when Spark placed none so, the executors of worker 1 and ps 1 at
 * the same instant). The barrier stage is retried; the replaced ps is refilled by a surviving
 * worker's copy or, when none reached it, every shard is rolled back to the latest checkpoint;
 * never filled from fresh values beside the other shard's trained ones.
 */
class ChaosSharedExecutorTest {
  @TempDir
  static Path home;
  @TempDir
  Path checkpoints;
  private static Faults cluster;

  @BeforeAll
  static void start() throws IOException {
    cluster = Faults.start(home, 3, 2, 2048, "chaos-shared");
  }

  @AfterAll
  static void stop() {
    cluster.stop();
  }

  private Dl4jEstimator estimator() {
    return new Dl4jEstimator().setNetworkJson(FashionMnistTestSet.mlp()).setNumWorkers(2).setNumPs(2)
        .setConsistency(Consistency.ASYNC).setEpochs(1).setBatchSize(64).setSeed(7).setEvalEverySeconds(1)
        .setCheckpointDir(checkpoints.toUri().toString()).setCheckpointInterval(50);
  }

  /** The executors to kill: one holding a worker and a ps, else those of worker 1 and ps 1. */
  private static Set<String> victims(List<TaskProgress> roles) {
    for (TaskProgress ps : roles.stream().filter(r -> r.role() == Role.PS).toList()) {
      if (roles.stream().anyMatch(r -> (r.role() == Role.WORKER || r.role() == Role.CHIEF)
          && r.executor().equals(ps.executor()))) {
        return Set.of(ps.executor());
      }
    }
    Set<String> both = new LinkedHashSet<>();
    roles.stream().filter(r -> (r.role() == Role.WORKER && r.index() == 1) || (r.role() == Role.PS && r.index() == 1))
        .forEach(r -> both.add(r.executor()));
    return both;
  }

  @Test
  void anExecutorHoldingAWorkerAndAPs_dies_theRunEndsWell_neverHalfReset() throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    double clean = cluster.accuracy(estimator().setCheckpointDir(checkpoints.resolve("clean").toUri().toString())
        .fit(cluster.train));

    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    FitJob job = estimator().fitAsync(cluster.train, cluster.eval);
    List<TaskProgress> roles = Faults.awaitChiefStep(job, job.totalSteps() * 4 / 10);
    Set<String> executors = victims(roles);
    for (String e : executors) {
      LocalClusters.signal(LocalClusters.executorProcess(cluster.sc, e), "KILL");
    }
    Dl4jModel model = job.get(Duration.ofMinutes(8));
    double accuracy = cluster.accuracy(model);
    List<PsRecovery> recoveries = model.summary().psRecoveries();
    System.out.printf("chaos: executors %s (of %s) killed at 40%%: %.4f against a clean %.4f, %d stage attempts, %s%n",
        executors, roles, accuracy, clean, model.summary().stageAttempts(), recoveries);
    assertTrue(accuracy >= clean - 0.01, accuracy + " against a clean " + clean);
    assertTrue(model.summary().stageAttempts() >= 2, "the barrier stage was retried: " + model.summary());
    assertTrue(!recoveries.isEmpty() && recoveries.stream().allMatch(r -> r.source() != null
        && (r.source().startsWith("worker ") || r.source().startsWith("the checkpoint of step "))), recoveries.toString());
    assertEquals(recoveries.stream().map(PsRecovery::shard).distinct().count(), recoveries.stream()
        .filter(r -> r.source() != null).map(PsRecovery::shard).distinct().count(), "every lost shard was refilled");
  }

  /**
   * The executors of ps 1 and ps 2 of three killed at once (SYNC), with whatever else they hold
   * (ps 0 and a worker, often): every lost shard is replaced and refilled, by a worker's copy or
   * from the checkpoint every shard rolls back to, and the run ends with its accuracy.
   */
  @Test
  void twoPsOfThree_killedAtOnceWithTheirExecutors_everyLostShardRefilled() throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    Dl4jEstimator sync = estimator().setNumPs(3).setConsistency(Consistency.SYNC);
    double clean = cluster.accuracy(sync.copy(new org.apache.spark.ml.param.ParamMap())
        .setCheckpointDir(checkpoints.resolve("clean").toUri().toString()).fit(cluster.train));
    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    FitJob job = sync.fitAsync(cluster.train);
    List<TaskProgress> roles = Faults.awaitChiefStep(job, job.totalSteps() / 2);
    Set<ProcessHandle> victims = new LinkedHashSet<>();
    roles.stream().filter(r -> r.role() == Role.PS && r.index() > 0)
        .forEach(r -> victims.add(LocalClusters.executorProcess(cluster.sc, r.executor())));
    for (ProcessHandle p : victims) {
      LocalClusters.signal(p, "KILL");
    }
    Dl4jModel model = job.get(Duration.ofMinutes(8));
    double accuracy = cluster.accuracy(model);
    List<PsRecovery> recoveries = model.summary().psRecoveries();
    System.out.printf("chaos: ps 1 and 2 of 3 killed at 50%% (%d executors): %.4f against a clean %.4f, %d stage "
        + "attempts, %s%n", victims.size(), accuracy, clean, model.summary().stageAttempts(), recoveries);
    assertTrue(accuracy >= clean - 0.01, accuracy + " against a clean " + clean);
    // Executors hold two slots: ps 0 may have gone down with them, and the workers with it.
    Set<Integer> lost = recoveries.stream().map(PsRecovery::shard).collect(java.util.stream.Collectors.toSet());
    assertTrue(lost.containsAll(Set.of(1, 2)), recoveries.toString());
    assertTrue(recoveries.stream().allMatch(r -> r.source() != null && (r.source().startsWith("worker ")
        || r.source().startsWith("the checkpoint of step "))), "every lost shard refilled: " + recoveries);
  }
}
