package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ps.Consistency;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.PsRecovery;
import io.sparkps.spark.Role;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.TrainingJob;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
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
 * Fashion-MNIST training survives the loss of a ps: the executor of a ps task is killed with
 * SIGKILL after about 30% of the steps ({@code local-cluster}, every task in a JVM of its own),
 * and the run ends on its own with a test accuracy within one point of a clean run with the same
 * seed, its summary naming the recovery.
 */
class PsLossTrainingTest {
  private static final int EPOCHS = 2;
  private static final int BATCH = 64;
  @TempDir
  static Path home;
  private static JavaSparkContext sc;
  private static SparkSession spark;
  private static Dataset<Row> train;
  private static FashionMnistTestSet test;

  @BeforeAll
  static void start() throws IOException {
    sc = LocalClusters.start(home, 4, 1, 1536, LocalClusters.conf().setAppName("ps-loss-training"));
    spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).cache();
    train.count();
    test = FashionMnistTestSet.read();
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
  }

  /** Trains with {@code numPs} ps; kills ps {@code kill}'s executor at 30% of the steps (none if -1). */
  private static Trained train(int numPs, int kill) throws Exception {
    LocalClusters.awaitExecutors(sc, 4, 120);
    ClusterSpec spec = ClusterSpec.builder().setNumPs(numPs).setNumWorkers(2).optRoleTimeout(Duration.ofSeconds(10))
        .build();
    Dl4jTrainer.Settings settings = Dl4jTrainer.Settings.of(FashionMnistTestSet.mlp(), "features", "label", Consistency.SYNC, EPOCHS,
        BATCH, 7);
    TrainingJob<float[]> job = Dl4jTrainer.trainAsync(spark, spec, train, settings);
    long total = EPOCHS * (60_000L / (2 * BATCH));
    if (kill >= 0) {
      List<TaskProgress> roles = awaitChiefStep(job, total * 3 / 10);
      TaskProgress ps = roles.stream().filter(r -> r.role() == Role.PS && r.index() == kill).findFirst().orElseThrow();
      LocalClusters.signal(LocalClusters.executorProcess(sc, ps.executor()), "KILL");
    }
    RunResult<float[]> result = job.get(Duration.ofMinutes(10));
    Net net = Net.fromJson(FashionMnistTestSet.mlp());
    net.setParams(result.chief());
    return new Trained(test.accuracy((MultiLayerNetwork) net.model()), result.psRecoveries(), total);
  }

  private record Trained(double accuracy, List<PsRecovery> recoveries, long steps) {}

  private static List<TaskProgress> awaitChiefStep(TrainingJob<?> job, long step) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    while (System.nanoTime() < deadline && !job.isDone()) {
      List<TaskProgress> now = job.progress();
      if (now.stream().anyMatch(p -> p.role() == Role.CHIEF && p.step() >= step)) {
        return now;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("the chief did not reach step " + step + ": " + job.status() + " " + job.progress());
  }

  @Test
  void killedPs_onePsAndOneOfTwo_accuracyWithinOnePointOfACleanRun() throws Exception {
    Trained clean = train(1, -1);
    Trained onePs = train(1, 0);
    Trained twoPs = train(2, 1);
    System.out.printf("Fashion-MNIST, SYNC, %d epochs: clean %.4f; ps 0 of 1 killed %.4f (%s); ps 1 of 2 killed %.4f (%s)%n",
        EPOCHS, clean.accuracy(), onePs.accuracy(), onePs.recoveries(), twoPs.accuracy(), twoPs.recoveries());
    assertTrue(clean.accuracy() > 0.8, "clean run: " + clean.accuracy());
    assertTrue(Math.abs(onePs.accuracy() - clean.accuracy()) <= 0.01, onePs + " vs " + clean);
    assertTrue(Math.abs(twoPs.accuracy() - clean.accuracy()) <= 0.01, twoPs + " vs " + clean);
    assertEquals(List.of(0), onePs.recoveries().stream().map(PsRecovery::shard).toList());
    assertEquals(List.of(1), twoPs.recoveries().stream().map(PsRecovery::shard).toList());
    for (PsRecovery r : List.of(onePs.recoveries().get(0), twoPs.recoveries().get(0))) {
      assertTrue(r.source() != null && r.source().startsWith("worker "), r.toString());
      assertTrue(r.atStep() >= clean.steps() * 3 / 10 && r.atStep() < clean.steps(), r.toString());
    }
  }
}
