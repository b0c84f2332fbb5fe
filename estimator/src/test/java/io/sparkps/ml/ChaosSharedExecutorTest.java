package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ps.Consistency;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.PsRecovery;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
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
  private static JavaSparkContext sc;
  private static SparkSession spark;
  private static Dataset<Row> train;
  private static Dataset<Row> eval;
  private static FashionMnistTestSet test;

  @BeforeAll
  static void start() throws IOException {
    sc = LocalClusters.start(home, 3, 2, 2048, LocalClusters.conf().setAppName("chaos-shared"));
    spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).cache();
    train.count();
    eval = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 1).limit(2000).cache();
    eval.count();
    test = FashionMnistTestSet.read();
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
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
    LocalClusters.awaitExecutors(sc, 3, 180);
    Dl4jModel cleanModel = estimator().setCheckpointDir(checkpoints.resolve("clean").toUri().toString()).fit(train);
    double clean = test.accuracy((MultiLayerNetwork) cleanModel.network());

    LocalClusters.awaitExecutors(sc, 3, 180);
    FitJob job = estimator().fitAsync(train, eval);
    List<TaskProgress> roles = awaitChiefStep(job, job.totalSteps() * 4 / 10);
    Set<String> executors = victims(roles);
    for (String e : executors) {
      LocalClusters.signal(LocalClusters.executorProcess(sc, e), "KILL");
    }
    Dl4jModel model = job.get(Duration.ofMinutes(8));
    double accuracy = test.accuracy((MultiLayerNetwork) model.network());
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

  private static List<TaskProgress> awaitChiefStep(FitJob job, long step) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    while (System.nanoTime() < deadline && !job.status().isDone()) {
      List<TaskProgress> now = job.progress();
      if (now.stream().anyMatch(p -> p.role() == Role.CHIEF && p.step() >= step)) {
        return now;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("the chief did not reach step " + step + ": " + job.status() + " " + job.progress());
  }
}
