package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker and a ps lost together, as when an executor with several cores dies on YARN:
 * {@code local-cluster[3,2,2048]}, 2 workers, ASYNC, with the defaults (no checkpoint directory).
 * The executor killed is chosen by the roles it holds: the chief's and a ps's. Spark kills the
 * whole barrier stage, so the surviving worker's task dies too; its copy outlives the task on its
 * executor ({@code KeptCopies}), and the chief of the retried stage has it refill the lost shard
 * before anyone trains: never fresh values beside trained ones, never a start from scratch.
 */
class ChaosSharedExecutorTest {
  @TempDir
  static Path home;
  @TempDir
  Path checkpoints;
  private static Faults cluster;

  @BeforeAll
  static void start() throws IOException {
    // The whole training set: the bar below is measured on it. On its first 20,000 images ASYNC's runs
    // spread wider: a run killed at step 117 of 312, refilled from a copy of step 96, ended 2.2 points
    // below the lowest of its clean runs in a .ci/run (8 runs alone had stayed within 0.53 below).
    cluster = Faults.start(home, 3, 2, 2048, "chaos-shared", 60_000);
  }

  @AfterAll
  static void stop() {
    cluster.stop();
  }

  private static Dl4jEstimator estimator(int numPs) {
    return new Dl4jEstimator().setNetworkJson(FashionMnistTestSet.mlp()).setNumWorkers(2).setNumPs(numPs)
        .setConsistency(Consistency.ASYNC).setEpochs(2).setBatchSize(64).setSeed(7);
  }

  /** The executor holding the chief and a ps, if Spark placed them together. */
  private static Optional<String> chiefAndPs(List<TaskProgress> roles) {
    return roles.stream().filter(r -> r.role() == Role.CHIEF).map(TaskProgress::executor)
        .filter(e -> roles.stream().anyMatch(r -> r.role() == Role.PS && r.executor().equals(e))).findFirst();
  }

  /**
   * Starts fits until Spark places the chief beside a ps (the placement is Spark's: a run placed
   * otherwise is cancelled and started again, at most 12 times: with one ps Spark put the chief
   * beside it in about a third of the runs, and 6 tries fell short once in 16 runs), then kills that executor at 30-60%
   * of the chief's steps (a chief beside its ps runs ahead of the heartbeats that report it: a run
   * seen past 60% is started again too) and returns the model.
   */
  private static Dl4jModel killChiefAndPsExecutor(Dl4jEstimator estimator) throws Exception {
    for (int tries = 1; tries <= 12; tries++) {
      LocalClusters.awaitExecutors(cluster.sc, 3, 180);
      FitJob job = estimator.fitAsync(cluster.train);
      List<TaskProgress> roles = Faults.awaitChiefStep(job, job.totalSteps() * 3 / 10);
      Optional<String> victim = chiefAndPs(roles);
      if (victim.isPresent()) {
        roles = awaitSurvivorsStepping(job, victim.get(), roles);
      }
      long killedAt = roles.stream().filter(r -> r.role() == Role.CHIEF).mapToLong(TaskProgress::step).max().orElse(0);
      if (victim.isEmpty() || killedAt > job.totalSteps() * 6 / 10) {
        job.cancel();
        awaitEnd(job);
        continue;
      }
      LocalClusters.signal(LocalClusters.executorProcess(cluster.sc, victim.get()), "KILL");
      Dl4jModel model = job.get(Duration.ofMinutes(8));
      System.out.printf("chaos: executor %s (%s) killed at step %d of %d (try %d)%n", victim.get(), roles, killedAt,
          job.totalSteps(), tries);
      return model;
    }
    throw new AssertionError("Spark never placed the chief beside a ps (seen before 60% of the steps) in 12 runs");
  }

  /**
   * Waits (2 minutes at most) until every worker off executor {@code victim} has taken a step: the
   * shard comes back from such a worker's copy of what it pulled. A worker still loading its
   * partition (recomputed after an earlier test killed the executor that cached it) holds no copy
   * yet, and a kill then rightly starts training over from the initializers (ServerStateTest): a
   * run that would show nothing of the kept copy. In CI once, ASYNC's chief reached 310 steps
   * while the other worker was at step 0.
   */
  private static List<TaskProgress> awaitSurvivorsStepping(FitJob job, String victim, List<TaskProgress> roles)
      throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    List<TaskProgress> now = roles;
    while (now.stream().anyMatch(r -> r.role() == Role.WORKER && !r.executor().equals(victim) && r.step() < 1)) {
      if (System.nanoTime() > deadline || job.status().isDone()) {
        throw new AssertionError("no step from the workers off executor " + victim + " within 2 minutes: " + now
            + "; status " + job.status());
      }
      Thread.sleep(50);
      now = job.progress();
    }
    return now;
  }

  private static void awaitEnd(FitJob job) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
    while (!job.status().isDone() && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
  }

  /** Every lost shard was refilled from a copy kept on a surviving executor, none from the initializers. */
  private static void assertRefilledFromKeptCopies(Dl4jModel model, long numPsLost) {
    List<PsRecovery> recoveries = model.summary().psRecoveries();
    assertTrue(model.summary().stageAttempts() >= 2, "the barrier stage was retried: " + model.summary());
    assertEquals(numPsLost, recoveries.stream().map(PsRecovery::shard).distinct().count(), recoveries.toString());
    for (PsRecovery r : recoveries) {
      assertTrue(r.source() != null && r.source().startsWith("worker ") && r.source().contains("kept by executor")
          && r.restoredAtStep() > 0, "refilled from a kept copy of a trained step: " + recoveries);
      assertTrue(r.source().matches(".*; optimizer state of steps? [1-9].*"),
          "the optimizer state came with the copy: " + recoveries);
    }
  }

  /**
   * Three clean fits with {@code numPs} ps, then the same with the executor of the chief and a ps
   * killed: it ends near the lowest clean one, its lost ps refilled from a kept copy of the values
   * and of the optimizer state. ASYNC's interleaving is the scheduler's, so clean runs alike end up
   * almost 3 points apart (0.8391-0.8674). With the state kept beside the values, 24 of 25 runs
   * ended within a point of the lowest of their three clean runs, on average 0.77 points above it;
   * one ended 1.30 below (0.8386, a clean run of the same hour scored 0.8391). The bar is 1.5
   * points: one point would fail a noise draw about once in 25 cases. (While a refilled shard's
   * Adam started afresh, 3 of 24 runs ended 1.05 to 2.0 points below.) ShardRecoveryTest holds
   * the mechanism exactly: the update after a refill equals a never-lost shard's.
   */
  private static void survivesTheLossOfTheChiefAndAPs(int numPs) throws Exception {
    double clean = 1;
    for (int run = 0; run < 3; run++) {
      LocalClusters.awaitExecutors(cluster.sc, 3, 180);
      clean = Math.min(clean, cluster.accuracy(estimator(numPs).fit(cluster.train)));
    }
    Dl4jModel model = killChiefAndPsExecutor(estimator(numPs));
    double accuracy = cluster.accuracy(model);
    System.out.printf("chaos (%d ps, defaults): %.4f against a clean %.4f (the lowest of 3), %d stage attempts, %s%n",
        numPs, accuracy, clean, model.summary().stageAttempts(), model.summary().psRecoveries());
    assertTrue(accuracy >= clean - 0.015, accuracy + " against a clean " + clean + " (the lowest of 3)");
    assertRefilledFromKeptCopies(model, 1);
  }

  @Test
  void theExecutorOfTheChiefAndAPs_dies_withTheDefaults_aKeptCopyRefillsTheShard() throws Exception {
    survivesTheLossOfTheChiefAndAPs(2);
  }

  /**
   * With one ps, the executor of the chief and the ps dies: every shard is lost, and the surviving
   * worker's kept copy refills it, so training goes on from where it was, not from the initializers.
   */
  @Test
  void theExecutorOfTheChiefAndTheOnlyPs_dies_withTheDefaults_trainingGoesOnFromTheKeptCopy() throws Exception {
    survivesTheLossOfTheChiefAndAPs(1);
  }

  /**
   * The executors of ps 1 and ps 2 of three killed at once (SYNC), with whatever else they hold
   * (ps 0 and a worker, often): every lost shard is replaced and refilled, by a worker's copy or
   * from the checkpoint every shard rolls back to, and the run ends with its accuracy.
   */
  @Test
  void twoPsOfThree_killedAtOnceWithTheirExecutors_everyLostShardRefilled() throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    Dl4jEstimator sync = estimator(3).setConsistency(Consistency.SYNC)
        .setCheckpointDir(checkpoints.toUri().toString()).setCheckpointInterval(50);
    double clean = cluster.accuracy(sync.copy(new org.apache.spark.ml.param.ParamMap())
        .setCheckpointDir(checkpoints.resolve("clean").toUri().toString()).fit(cluster.train));
    LocalClusters.awaitExecutors(cluster.sc, 3, 180);
    FitJob job = sync.fitAsync(cluster.train);
    List<TaskProgress> roles = Faults.awaitSyncStep(job, job.totalSteps() / 2);
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
