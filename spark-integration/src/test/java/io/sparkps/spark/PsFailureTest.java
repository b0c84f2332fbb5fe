package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Lost and hung roles in real processes: every task in an executor JVM of its own
 * ({@code local-cluster}, one core each, one executor spare), killed with SIGKILL or stopped with
 * SIGSTOP while two workers train in SYNC steps. The run ends on its own, every SYNC step counted.
 */
class PsFailureTest {
  private static final int STEPS = 150;
  private static final Duration ROLE_TIMEOUT = Duration.ofSeconds(4);
  @TempDir
  static Path home;
  private static JavaSparkContext sc;
  /** The case's run: cancelled after the case if it is still going (a failed assertion left it holding slots). */
  private TrainingJob<float[]> run;

  @BeforeAll
  static void start() throws IOException {
    sc = LocalClusters.start(home, 4, 1, 768, LocalClusters.conf());
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
  }

  @AfterEach
  void endTheRun() throws InterruptedException {
    if (run != null && !run.isDone()) {
      run.cancel();
      try {
        run.get(Duration.ofSeconds(60));
      } catch (java.util.concurrent.CancellationException | TrainingFailure | java.util.concurrent.TimeoutException e) {
        // it ended (or the next case's wait for its executors says what is still held)
      }
    }
  }

  @BeforeEach
  void allExecutorsUp() {
    LocalClusters.awaitExecutors(sc, 4, 120); // the master replaces the one a test killed
  }

  /**
   * Pushes a gradient of ones STEPS times in SYNC steps (SGD, learning rate 1, from zeros; 512 KiB,
   * so split over the ps), continuing from the servers' version when the stage is retried; returns the final w.
   */
  static float[] syncWorker(WorkerContext<Integer> ctx) throws Exception {
    PsClient ps = ctx.ps();
    ps.createGroup(ConsistencyGroup.sync("g", ctx.numWorkers()));
    ps.create(VariableSpec.builder().setName("w").setShape(512, 256).optInitializer(Initializer.zeros())
        .optOptimizer(OptimizerConfig.sgd(1)).optGroup("g").build());
    if (ctx.isChief() && ps.reportUninitialized().contains("w")) {
      ps.initializeAll();
    }
    ps.awaitInitialized(List.of("w"), Duration.ofSeconds(60));
    ps.setStep(ps.read("w").version());
    INDArray w = Nd4j.create(DataType.FLOAT, 512, 256);
    INDArray ones = Nd4j.ones(DataType.FLOAT, 512, 256);
    while (ps.step() < STEPS) {
      ps.pullInto(Map.of("w", w));
      ps.push(Map.of("w", ones));
      ctx.progress().report(ps.step(), ps.step(), Map.of());
      Thread.sleep(25);
    }
    ctx.barrier();
    return ps.read("w").value().data().asFloat();
  }

  private static ClusterSpec spec(int numPs) {
    return ClusterSpec.builder().setNumPs(numPs).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(200))
        .optRoleTimeout(ROLE_TIMEOUT).optCallTimeout(Duration.ofSeconds(20)).build();
  }

  private TrainingJob<float[]> start(int numPs) {
    ClusterSpec spec = spec(numPs);
    run = new TrainingCluster(sc, spec).runAsync(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2),
        PsFailureTest::syncWorker);
    return run;
  }

  /** Waits until the chief reported step {@code step}; returns the task progress of every role then. */
  private static List<TaskProgress> awaitStep(TrainingJob<?> job, long step) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline) {
      List<TaskProgress> now = job.progress();
      if (now.stream().anyMatch(p -> p.role() == Role.CHIEF && p.step() >= step)) {
        return now;
      }
      assertTrue(!job.isDone(), "the run ended before step " + step + ": " + job.status());
      Thread.sleep(50);
    }
    throw new AssertionError("the chief did not reach step " + step + " within 120 s: " + job.progress());
  }

  /**
   * Milliseconds from {@code since} until the run reports ps {@code shard} lost (first value) and
   * refilled (second), polling its live view.
   */
  private static long[] awaitRecovery(TrainingJob<?> job, int shard, long since) throws InterruptedException {
    long noticed = -1;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (System.nanoTime() < deadline && !job.isDone()) {
      List<PsRecovery> now = job.psRecoveries().stream().filter(r -> r.shard() == shard).toList();
      long ms = (System.nanoTime() - since) / 1_000_000;
      if (!now.isEmpty() && noticed < 0) {
        noticed = ms;
      }
      if (!now.isEmpty() && now.get(0).source() != null) {
        return new long[] {noticed, ms};
      }
      Thread.sleep(25);
    }
    throw new AssertionError("ps " + shard + " was not recovered within 120 s: " + job.psRecoveries());
  }

  private static ProcessHandle processOf(List<TaskProgress> roles, Role role, int index) {
    TaskProgress p = roles.stream().filter(r -> r.role() == role && r.index() == index).findFirst().orElseThrow();
    return LocalClusters.executorProcess(sc, p.executor());
  }

  /** Checks w: rows on surviving shards took every step; rows on the lost one all but one or two. */
  private static void assertSteps(float[] w, int numPs, int lostShard, Object context) {
    int half = w.length / numPs;
    for (int i = 0; i < w.length; i++) {
      float lost = STEPS + w[i];
      if (i / half == lostShard) {
        assertTrue(lost >= 1 && lost <= 2, "element " + i + " on the replaced shard lost " + lost + " steps: " + context);
      } else {
        assertEquals(-STEPS, w[i], 0, "element " + i + " on a surviving shard: " + context);
      }
    }
  }

  @Test
  void killedPs_isReplacedAndRefilled_theRunEndsOnItsOwn() throws Exception {
    TrainingJob<float[]> job = start(1);
    ProcessHandle ps = processOf(awaitStep(job, STEPS * 3 / 10), Role.PS, 0);
    long killed = System.nanoTime();
    LocalClusters.signal(ps, "KILL");
    long[] times = awaitRecovery(job, 0, killed);
    RunResult<float[]> result = job.get(Duration.ofMinutes(3));
    assertSteps(result.chief(), 1, 0, result.psRecoveries());
    assertEquals(1, result.psRecoveries().size(), result.psRecoveries().toString());
    PsRecovery r = result.psRecoveries().get(0);
    assertEquals(0, r.shard());
    assertTrue(r.source().matches("worker [01]'s copy of step \\d+ \\[w\\]"), r.toString());
    assertTrue(r.atStep() >= STEPS * 3 / 10 && r.atStep() < STEPS, r.toString());
    assertTrue(!r.replacement().equals(r.lostAddress()), r.toString());
    assertEquals(1, result.stageAttempts(), "no stage retry: the workers moved to the replacement");
    System.out.printf("ps kill -9: declared lost %d ms after the kill, refilled after %d ms: %s%n", times[0],
        times[1], r);
    assertTrue(times[0] < ROLE_TIMEOUT.toMillis(), "a killed ps is noticed by its unreachable port, before the role "
        + "timeout: " + times[0] + " ms");
  }

  @Test
  void oneOfTwoPsKilled_onlyItsShardIsRefilled() throws Exception {
    TrainingJob<float[]> job = start(2);
    ProcessHandle ps = processOf(awaitStep(job, STEPS * 3 / 10), Role.PS, 1);
    LocalClusters.signal(ps, "KILL");
    RunResult<float[]> result = job.get(Duration.ofMinutes(3));
    assertSteps(result.chief(), 2, 1, result.psRecoveries());
    // Only ps 1 was lost, once: whichever registers first, Spark's retry of its task or the
    // driver's relaunch, is its one replacement (SupervisorTest holds the two apart).
    assertEquals(1, result.psRecoveries().size(), result.psRecoveries() + "; failures: " + result.recoveredFailures());
    assertTrue(result.psRecoveries().get(0).shard() == 1
        && result.psRecoveries().get(0).source().matches("worker [01]'s copy of step \\d+ \\[w\\]"),
        result.psRecoveries() + "; failures: " + result.recoveredFailures());
  }

  @Test
  void stoppedPs_isDeclaredLostAfterTheRoleTimeout_andReplaced() throws Exception {
    TrainingJob<float[]> job = start(1);
    ProcessHandle ps = processOf(awaitStep(job, STEPS * 3 / 10), Role.PS, 0);
    long stopped = System.nanoTime();
    LocalClusters.signal(ps, "STOP");
    try {
      long[] times = awaitRecovery(job, 0, stopped);
      RunResult<float[]> result = job.get(Duration.ofMinutes(2));
      assertSteps(result.chief(), 1, 0, result.psRecoveries());
      PsRecovery r = result.psRecoveries().get(0);
      assertTrue(r.reason().startsWith("it was silent: ps 0 on ") && r.reason().contains("longer than the role timeout"),
          r.reason());
      System.out.printf("ps SIGSTOP: declared lost %d ms after the stop, refilled after %d ms: %s%n", times[0],
          times[1], r);
      // Silence counts from the last heartbeat, up to one interval (200 ms) before the stop.
      assertTrue(times[0] >= ROLE_TIMEOUT.toMillis() - 300 && times[0] < ROLE_TIMEOUT.toMillis() + 2000,
          "declared lost after the role timeout, not much later: " + times[0] + " ms");
      assertTrue(times[1] < ROLE_TIMEOUT.toMillis() + 30_000, "refilled " + times[1] + " ms after the stop");
      // The run had the hung executor killed and replaced (Spark alone would hold it for 120 s).
      ps.onExit().get(60, TimeUnit.SECONDS);
    } finally {
      if (ps.isAlive()) {
        LocalClusters.signal(ps, "KILL"); // unless the run had its executor killed and replaced
      }
    }
  }

  @Test
  void stoppedWorker_hasItsStageAttemptKilledAndRetried() throws Exception {
    TrainingJob<float[]> job = start(1);
    ProcessHandle worker = processOf(awaitStep(job, STEPS * 3 / 10), Role.WORKER, 1);
    long stopped = System.nanoTime();
    LocalClusters.signal(worker, "STOP");
    try {
      RunResult<float[]> result = job.get(Duration.ofMinutes(2));
      long seconds = (System.nanoTime() - stopped) / 1_000_000_000L;
      assertSteps(result.chief(), 1, -1, result.psRecoveries());
      assertEquals(2, result.stageAttempts());
      assertTrue(result.recoveredFailures().toString().contains("worker 1 on ")
          && result.recoveredFailures().toString().contains("was silent for"), result.recoveredFailures().toString());
      assertTrue(seconds < 40, "retried within " + seconds + " s, well before Spark's 120 s network timeout");
      System.out.printf("worker SIGSTOP: run ended %d s after the stop: %s%n", seconds, result.recoveredFailures());
      worker.onExit().get(60, TimeUnit.SECONDS); // the run had the hung executor killed and replaced
    } finally {
      if (worker.isAlive()) {
        LocalClusters.signal(worker, "KILL"); // unless the run had its executor killed and replaced
      }
    }
  }
}
