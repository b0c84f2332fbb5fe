package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.TrainingJob;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults as users met them: the first 20,000 images of Fashion-MNIST through the estimator on
 * {@code local-cluster[4,1,1536]} with 2 workers, 1 ps and an evaluator, so that every task slot
 * is busy (the evaluator's reads race the workers' refills of a replaced ps, and a hung ps's
 * replacement has no free slot until its executor is replaced). Each fault, at two points of the
 * run, must end in a model no more than {@link #BAR} below a clean run's test accuracy, with the
 * recovery recorded.
 */
class ChaosTest {
  private static final int BATCH = 64;
  /** The part of Fashion-MNIST's training set every run here trains on, the clean run's included. */
  private static final int TRAIN_ROWS = 20_000;
  /**
   * How far below the clean run a faulted run may end, on this part of the data: 1.5 points. The
   * clean run is the same whenever it runs (0.8035 on these rows, 5 of 5 runs, since its rows no
   * longer depend on the order a limit's blocks arrive in); faulted runs ended 0.7953-0.8066 against
   * it. A recovery that loses the shard's training (a reset or a stale refill) costs several points
   * more.
   */
  private static final double BAR = 0.015;
  /** ClusterSpec's default, which the estimator uses. */
  private static final Duration ROLE_TIMEOUT = Duration.ofSeconds(20);
  @TempDir
  static Path home;
  private static Faults cluster;
  private static double clean = Double.NaN;

  @BeforeAll
  static void start() throws IOException {
    cluster = Faults.start(home, 4, 1, 1536, "chaos", TRAIN_ROWS);
  }

  @AfterAll
  static void stop() {
    cluster.stop();
  }

  /**
   * What one run ended with; for a ps fault, milliseconds from the signal until the run declared
   * the ps lost and until its replacement was refilled (-1 when it did not happen).
   */
  private record Outcome(double accuracy, List<PsRecovery> recoveries, int stageAttempts, long seconds, long noticedMs,
      long refilledMs, List<String> recoveredFailures) {}

  /** A fault done to the process of a role once the chief reached a step. */
  private record Fault(Role role, int index, String signal, double at) {}

  private static Dl4jEstimator estimator() {
    return new Dl4jEstimator().setNetworkJson(FashionMnistTestSet.mlp()).setNumWorkers(2).setNumPs(1)
        .setConsistency(Consistency.SYNC).setEpochs(1).setBatchSize(BATCH).setSeed(7).setEvalEverySeconds(1);
  }

  private static Outcome run(Fault fault) throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 4, 180);
    long started = System.nanoTime();
    FitJob job = estimator().fitAsync(cluster.train, cluster.eval);
    ProcessHandle victim = null;
    long[] times = {-1, -1};
    try {
      if (fault != null) {
        List<TaskProgress> roles = Faults.awaitSyncStep(job, (long) (job.totalSteps() * fault.at()));
        TaskProgress target = roles.stream().filter(r -> r.role() == fault.role() && r.index() == fault.index())
            .findFirst().orElseThrow(() -> new AssertionError("no " + fault.role() + " " + fault.index() + ": " + roles));
        victim = LocalClusters.executorProcess(cluster.sc, target.executor());
        long signalled = System.nanoTime();
        LocalClusters.signal(victim, fault.signal());
        if (fault.role() == Role.PS) {
          times = Faults.awaitRecovery(job, signalled);
        }
      }
      Dl4jModel model = job.get(Duration.ofMinutes(8));
      TrainingSummary summary = model.summary();
      return new Outcome(cluster.accuracy(model), summary.psRecoveries(), summary.stageAttempts(),
          (System.nanoTime() - started) / 1_000_000_000L, times[0], times[1], summary.recoveredFailures());
    } finally {
      if (victim != null) {
        LocalClusters.killIfAlive(victim);
      }
    }
  }

  private static synchronized double clean() throws Exception {
    if (Double.isNaN(clean)) {
      Outcome o = run(null);
      assertEquals(List.of(), o.recoveries());
      clean = o.accuracy();
      System.out.printf("chaos: clean run %.4f in %d s%n", clean, o.seconds());
      // It trains: 0.8035 in each of 5 runs on these rows (the bar below measures the faults against it).
      assertTrue(clean > 0.79, "clean run: " + clean);
    }
    return clean;
  }

  private static void assertSurvived(Outcome o, String what) throws Exception {
    System.out.printf("chaos: %s -> %.4f in %d s, %d stage attempts, ps lost after %d ms, refilled after %d ms, %s%n",
        what, o.accuracy(), o.seconds(), o.stageAttempts(), o.noticedMs(), o.refilledMs(), o.recoveries());
    // Within the bar of a clean run, or better (a refilled shard restarts its optimizer state, which can help).
    assertTrue(o.accuracy() >= clean() - BAR, what + ": " + o + " against a clean " + clean());
  }

  /**
   * The points are of the run's SYNC steps as the ps's variables count them
   * ({@link Faults#awaitSyncStep}). As the chief's heartbeats reported them, a second apart, they
   * lagged the run by most of its training: "45%" landed after the last push, and in one .ci/run
   * "30%" did, leaving no worker to refill the ps. A late fault is at 30% here (30-50% for the
   * SIGSTOPs below).
   */
  @Test
  void psKilled_earlyAndLate_withEverySlotBusy_survivedAndRecorded() throws Exception {
    for (double at : new double[] {0.15, 0.3}) {
      Outcome o = run(new Fault(Role.PS, 0, "KILL", at));
      assertSurvived(o, "ps kill -9 at " + at);
      assertEquals(1, o.recoveries().size(), o.toString());
      PsRecovery r = o.recoveries().get(0);
      assertTrue(r.source() != null && r.source().startsWith("worker "), "refilled from a worker's copy: " + r);
    }
  }

  @Test
  void psStopped_withEverySlotBusy_isFoundWithinTheRoleTimeout_andReplaced() throws Exception {
    for (double at : new double[] {0.3, 0.5}) {
      Outcome o = run(new Fault(Role.PS, 0, "STOP", at));
      assertSurvived(o, "ps SIGSTOP at " + at);
      assertEquals(1, o.recoveries().size(), o.toString());
      PsRecovery r = o.recoveries().get(0);
      // Found by its silence: a worker's call that hung, or its heartbeats, whichever comes first.
      assertTrue(r.reason().startsWith("it was silent: ps 0 on ") || r.reason().startsWith("a worker could not reach it"),
          r.toString());
      assertTrue(r.source() != null && r.source().startsWith("worker "), "refilled from a worker's copy: " + r);
      assertTrue(o.noticedMs() >= 0 && o.noticedMs() <= ROLE_TIMEOUT.toMillis() + 5_000,
          "found " + o.noticedMs() + " ms after the stop, not within the role timeout + 5 s");
      // Its executor is killed and replaced at once: the relaunch does not wait for Spark's 120 s timeout.
      assertTrue(o.refilledMs() >= 0 && o.refilledMs() < o.noticedMs() + 40_000,
          "refilled " + o.refilledMs() + " ms after the stop, found after " + o.noticedMs());
    }
  }

  @Test
  void workerStopped_withEverySlotBusy_theStageIsRetried() throws Exception {
    Outcome o = run(new Fault(Role.WORKER, 1, "STOP", 0.4));
    assertSurvived(o, "worker 1 SIGSTOP at 0.4");
    assertTrue(o.stageAttempts() >= 2, o.toString());
    assertTrue(o.recoveredFailures().stream().anyMatch(f -> f.startsWith("worker 1 on ") && f.contains("was silent for")),
        "the summary says why the first attempt failed: " + o.recoveredFailures());
  }

  /**
   * The trainer under the estimator, the executor of ps {@code kill} of {@code numPs} killed with
   * SIGKILL at 30% of the steps: the run ends on its own within the bar of the clean run, its
   * result naming the refill of that shard, from a worker's copy, at a step after the kill.
   */
  private static void trainerSurvives(int numPs, int kill) throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 4, 180);
    TrainingConfig config = TrainingConfig.builder().optNumPs(numPs).optNumWorkers(2).optConsistency(Consistency.SYNC)
        .optEpochs(1).optBatchSize(BATCH).optSeed(7).build();
    ClusterSpec spec = config.clusterSpec().optRoleTimeout(Duration.ofSeconds(10)).build();
    TrainingJob<float[]> job = Dl4jTrainer.trainAsync(cluster.spark, spec, cluster.train, FashionMnistTestSet.mlp(),
        config);
    long total = cluster.trainRows / (2 * BATCH);
    List<TaskProgress> roles = Faults.awaitSyncStep(job, total * 3 / 10);
    TaskProgress ps = roles.stream().filter(r -> r.role() == Role.PS && r.index() == kill).findFirst().orElseThrow();
    LocalClusters.signal(LocalClusters.executorProcess(cluster.sc, ps.executor()), "KILL");
    RunResult<float[]> result = job.get(Duration.ofMinutes(8));
    Net net = Net.fromJson(FashionMnistTestSet.mlp());
    net.setParams(result.chief());
    double accuracy = cluster.test.accuracy((org.deeplearning4j.nn.multilayer.MultiLayerNetwork) net.model());
    System.out.printf("chaos: trainer, ps %d of %d killed at 30%%: %.4f against a clean %.4f, %s%n", kill, numPs,
        accuracy, clean(), result.psRecoveries());
    assertTrue(Math.abs(accuracy - clean()) <= BAR, accuracy + " against a clean " + clean());
    assertEquals(List.of(kill), result.psRecoveries().stream().map(PsRecovery::shard).toList());
    PsRecovery r = result.psRecoveries().get(0);
    assertTrue(r.source() != null && r.source().startsWith("worker "), r.toString());
    // Refilled from a worker's copy of the step before the kill or later (the loss's own step is
    // the furthest the driver had heard of, a heartbeat behind the ps's count the kill waited for).
    assertTrue(r.restoredAtStep() >= total * 3 / 10 - 1 && r.restoredAtStep() < total, r.toString());
  }

  @Test
  void psKilled_throughTheTrainer_theOnlyPsAndOneOfTwo_withinOnePointOfACleanRun() throws Exception {
    trainerSurvives(1, 0);
    trainerSurvives(2, 1);
  }

  /**
   * An embedding model's ps killed (SIGKILL) half way: no worker holds a copy of a table, so the
   * replacement's share of the tables comes back from the newest checkpoint, and the run's summary
   * says from which step and that the updates since are lost; the model scores within a point of
   * AUC of a clean run's.
   */
  @Test
  void psKilled_inAnEmbeddingModel_itsTablesComeBackFromTheCheckpoint_theLostUpdatesSaid() throws Exception {
    io.sparkps.ml.datasets.ClickThroughData data = io.sparkps.ml.datasets.ClickThroughData.builder().optScale(0.001)
        .optSignalIds(100).optSeed(5).build();
    Dataset<Row> train = logCounts(data, data.rows(cluster.spark, 0, 30_000, 2)).cache();
    Dataset<Row> test = logCounts(data, data.rows(cluster.spark, 1_000_000, 10_000, 2)).cache();
    train.count();
    double cleanAuc = embeddingAuc(embeddingFit(data, train, "clean", -1), test);
    Dl4jModel faulted = embeddingFit(data, train, "faulted", 1);
    List<PsRecovery> recoveries = faulted.summary().psRecoveries();
    double auc = embeddingAuc(faulted, test);
    System.out.printf("chaos: embedding model, ps 1 of 2 killed at 50%%: AUC %.4f against a clean %.4f, %s%n", auc,
        cleanAuc, recoveries);
    assertEquals(List.of(1), recoveries.stream().map(PsRecovery::shard).toList());
    String source = recoveries.get(0).source();
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("embedding tables \\[[^]]+\\] from the checkpoint of "
        + "step (\\d+) .*their updates on it after step \\1, up to step (\\d+), are lost").matcher(source);
    assertTrue(m.find(), source);
    long from = Long.parseLong(m.group(1));
    long upTo = Long.parseLong(m.group(2));
    assertTrue(from >= 20 && from <= upTo && upTo - from <= 40, "a checkpoint of every 20 steps: " + source);
    assertTrue(auc >= cleanAuc - 0.01, auc + " against a clean " + cleanAuc);
    train.unpersist();
    test.unpersist();
  }

  private static Dataset<Row> logCounts(io.sparkps.ml.datasets.ClickThroughData data, Dataset<Row> rows) {
    for (String c : data.numericColumns()) {
      rows = rows.withColumn(c, org.apache.spark.sql.functions.log1p(org.apache.spark.sql.functions.col(c)));
    }
    return rows;
  }

  /** 2 workers and 2 ps, SYNC, checkpoints every 20 steps; ps {@code kill} (unless -1) SIGKILLed at 50%. */
  private static Dl4jModel embeddingFit(io.sparkps.ml.datasets.ClickThroughData data, Dataset<Row> train, String name,
      int kill) throws Exception {
    LocalClusters.awaitExecutors(cluster.sc, 4, 180);
    List<io.sparkps.ml.param.EmbeddingColumn> columns = new java.util.ArrayList<>();
    for (String c : data.categoricalColumns()) {
      columns.add(io.sparkps.ml.param.EmbeddingColumn.of(c, 4).withOptimizer("ADAGRAD", 0.1).withMinCount(20));
    }
    String network = new org.deeplearning4j.nn.conf.NeuralNetConfiguration.Builder().seed(3)
        .updater(new org.nd4j.linalg.learning.config.Adam(2e-3)).list()
        .layer(new org.deeplearning4j.nn.conf.layers.DenseLayer.Builder().nIn(26 * 4 + 13).nOut(32)
            .activation(org.nd4j.linalg.activations.Activation.RELU).build())
        .layer(new org.deeplearning4j.nn.conf.layers.OutputLayer.Builder(
            org.nd4j.linalg.lossfunctions.LossFunctions.LossFunction.MCXENT).nIn(32).nOut(2)
            .activation(org.nd4j.linalg.activations.Activation.SOFTMAX).build()).build().toJson();
    FitJob job = new Dl4jEstimator().setEmbeddingColumns(columns, data.numericColumns().toArray(new String[0]))
        .setNetworkJson(network).setNumWorkers(2).setNumPs(2).setConsistency(Consistency.SYNC).setEpochs(1)
        .setBatchSize(128).setSeed(7).setCheckpointDir(home.resolve("embeddings-" + name).toUri().toString())
        .setCheckpointInterval(20).fitAsync(train);
    if (kill >= 0) {
      List<TaskProgress> roles = Faults.awaitSyncStep(job, job.totalSteps() / 2);
      TaskProgress ps = roles.stream().filter(r -> r.role() == Role.PS && r.index() == kill).findFirst().orElseThrow();
      LocalClusters.signal(LocalClusters.executorProcess(cluster.sc, ps.executor()), "KILL");
    }
    return job.get(Duration.ofMinutes(8));
  }

  private static double embeddingAuc(Dl4jModel model, Dataset<Row> test) {
    return new org.apache.spark.ml.evaluation.BinaryClassificationEvaluator().setRawPredictionCol("probability")
        .setNumBins(0).evaluate(model.transform(test));
  }

  @Test
  void aRelativeCheckpointDirAcrossJvms_isRefusedBeforeLaunch() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> estimator().setCheckpointDir("ckpt-here").fitAsync(cluster.train, cluster.eval));
    assertTrue(e.getMessage().startsWith("checkpointDir 'ckpt-here' is relative: each executor would resolve it"),
        e.getMessage());
  }
}
