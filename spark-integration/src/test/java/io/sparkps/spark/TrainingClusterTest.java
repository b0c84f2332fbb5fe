package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.VariableValue;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class TrainingClusterTest {
  /** How often worker 1's function started (local mode: the tasks run in this JVM). */
  private static final java.util.concurrent.atomic.AtomicInteger WORKER_ONE_RUNS =
      new java.util.concurrent.atomic.AtomicInteger();
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() {
    sc = SparkTestSupport.local(6);
  }

  @AfterAll
  static void stop() {
    sc.stop();
  }

  private static JavaRDD<Integer> numbers(int n) {
    return sc.parallelize(IntStream.range(0, n).boxed().toList(), 3);
  }

  /** The Distributed TF seed example: chief initializes, each worker adds 1 five times. */
  static Float seedWorker(WorkerContext<Integer> ctx) throws Exception {
    ctx.ps().create(VariableSpec.of("counter"));
    if (ctx.isChief()) {
      ctx.ps().initializeAll();
    } else {
      ctx.ps().awaitInitialized(List.of("counter"), Duration.ofSeconds(30));
    }
    for (int i = 0; i < 5; i++) {
      ctx.ps().assignAdd("counter", 1.0);
      ctx.progress().report(i + 1, i + 1, Map.of("added", i + 1.0));
      Thread.sleep(30);
    }
    long deadline = System.nanoTime() + 30_000_000_000L;
    float value = ctx.ps().read("counter").value().getFloat(0);
    while (value < 10f && System.nanoTime() < deadline) {
      Thread.sleep(20);
      value = ctx.ps().read("counter").value().getFloat(0);
    }
    return value;
  }

  static void pollingEvaluator(EvaluatorContext ctx) throws Exception {
    // As an evaluator must: wait until the chief has created the variable, then until it has initialized it
    // (a read in between is refused as uninitialized).
    while (true) {
      try {
        ctx.ps().awaitInitialized(List.of("counter"), Duration.ofSeconds(30));
        break;
      } catch (IllegalArgumentException notCreatedYet) {
        Thread.sleep(10);
      }
    }
    long last = -1;
    boolean stopping;
    do {
      stopping = ctx.isStopping();
      VariableValue v = ctx.ps().read("counter");
      if (v.version() != last) {
        last = v.version();
        ctx.progress().report(v.version(), 0, Map.of("counter", (double) v.value().getFloat(0)));
      }
      Thread.sleep(10);
    } while (!stopping);
  }

  @Test
  void dataWithOnePartitionPerWorker_staysWhereItIs_unlessABarrierStageCannotRunOnIt() {
    JavaRDD<Integer> two = sc.parallelize(IntStream.range(0, 10).boxed().toList(), 2);
    assertTrue(PerWorker.of(two, 2) == two, "no shuffle for data already split per worker");
    JavaRDD<Integer> coalesced = numbers(10).coalesce(2);
    JavaRDD<Integer> spread = PerWorker.of(coalesced, 2);
    assertTrue(spread != coalesced && spread.getNumPartitions() == 2, "a coalesce cannot feed a barrier stage");
    assertEquals(2, PerWorker.of(numbers(10), 2).getNumPartitions());
  }

  @Test
  void barriers_passWithinMilliseconds_notSparksOneSecondPoll() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    RunResult<Long> result = new TrainingCluster(sc, spec).run(numbers(4), ctx -> {
      ctx.barrier(); // both workers have started: what follows is the barriers alone
      long t0 = System.nanoTime();
      for (int i = 0; i < 5; i++) {
        ctx.barrier();
      }
      return (System.nanoTime() - t0) / 1_000_000;
    });
    for (long millis : result.results()) {
      // each is a few ms; a 400 ms poll would take about 1 s for 5, Spark's 1 s poll about 2.5 s
      assertTrue(millis < 300, "5 barriers took " + millis + " ms");
    }
  }

  @Test
  void seedExample_onePsTwoWorkers_endsAtTenAndTheEvaluatorSawVersionsAdvance() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optEvaluator(true)
        .optHeartbeatInterval(Duration.ofMillis(50)).build();
    RunResult<Float> result = new TrainingCluster(sc, spec).withEvaluator(TrainingClusterTest::pollingEvaluator)
        .run(numbers(10), TrainingClusterTest::seedWorker);
    assertEquals(List.of(10f, 10f), result.results());
    assertEquals(List.of(), result.recoveredFailures(), "no task failed, the evaluator included");
    List<Long> versions = result.evaluatorHistory().stream().map(TaskProgress::step).toList();
    // At least one read while training ran, and the last after it: an evaluator that started late on a
    // loaded machine (or whose reports a heartbeat coalesced) sees fewer, as [6, 10] in one CI run.
    assertTrue(versions.size() >= 2 && versions.get(0) < 10, "the evaluator saw versions advance: " + versions);
    for (int i = 1; i < versions.size(); i++) {
      assertTrue(versions.get(i) > versions.get(i - 1), "versions advance: " + versions);
    }
    assertEquals(10L, versions.get(versions.size() - 1), "the evaluator's last read saw all ten adds");
    assertEquals(1, result.stageAttempts());
  }

  @Test
  void aChiefReturningNull_hasItsResultReadFromTheShardsOnTheDriver_beforeTheyStop() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    List<String> readOn = new ArrayList<>();
    RunResult<Float> result = new TrainingCluster(sc, spec).runAsync(numbers(4), ctx -> {
      float value = seedWorker(ctx);
      return ctx.isChief() ? null : value;
    }, ps -> {
      readOn.add(Thread.currentThread().getName());
      return ps.read("counter").value().getFloat(0) + 0.5f; // what the shard held after all ten adds, marked
    }).join();
    assertEquals(List.of(10.5f, 10f), result.results(), "the chief's from the shard, worker 1's its own");
    assertTrue(readOn.size() == 1 && readOn.get(0).startsWith("sparkps-run-"), "read once, on the driver: " + readOn);

    // A chief that returns a result keeps it: the read is not made.
    RunResult<Float> own = new TrainingCluster(sc, spec).runAsync(numbers(4), TrainingClusterTest::seedWorker, ps -> {
      throw new AssertionError("not read when the chief returned its result");
    }).join();
    assertEquals(List.of(10f, 10f), own.results());

    // A read that fails fails the run, naming its cause.
    TrainingJob<Float> failing = new TrainingCluster(sc, spec).runAsync(numbers(4), ctx -> {
      seedWorker(ctx);
      return null;
    }, ps -> ps.read("no-such-variable").value().getFloat(0));
    Exception e = assertThrows(Exception.class, failing::join);
    assertTrue(String.valueOf(e.getMessage()).contains("no-such-variable"), String.valueOf(e));
    assertEquals(JobStatus.FAILED, failing.status());
  }

  @Test
  void inspect_afterTheRun_showsRolesAndTheFinalVariables() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    TrainingJob<Float> job = new TrainingCluster(sc, spec).runAsync(numbers(4), TrainingClusterTest::seedWorker);
    job.get(Duration.ofMinutes(2));
    ClusterView view = job.inspect();
    assertEquals(JobStatus.SUCCEEDED, view.status());
    assertEquals(1, view.variables().size(), view.toString());
    assertEquals(10, view.variables().get(0).version(), "ten assignAdds: " + view);
    assertEquals(List.of(Role.CHIEF, Role.PS, Role.WORKER), view.roles().stream().map(TaskProgress::role).toList());
  }

  @Test
  void workerFailingOnFirstAttempt_stageIsRetried_andVariablesKeepTheirState() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    RunResult<String> result = new TrainingCluster(sc, spec).run(numbers(6), ctx -> {
      ctx.ps().create(VariableSpec.of("counter"));
      if (ctx.isChief()) {
        boolean initialized = !ctx.ps().initialize(List.of("counter")).isEmpty();
        if (ctx.stageAttempt() == 0) {
          ctx.ps().assignAdd("counter", 100.0);
          while (!org.apache.spark.TaskContext.get().isInterrupted()) {
            Thread.sleep(20);
          }
          return "killed";
        }
        return "attempt " + ctx.stageAttempt() + " initialized=" + initialized + " value="
            + ctx.ps().read("counter").value().getFloat(0);
      }
      ctx.ps().awaitInitialized(List.of("counter"), Duration.ofSeconds(30));
      if (ctx.stageAttempt() == 0) {
        while (ctx.ps().read("counter").value().getFloat(0) < 100f) {
          Thread.sleep(10);
        }
        // transient (a peer went away): Spark retries the stage
        throw new java.io.UncheckedIOException(new java.net.SocketException("injected failure of worker 1"));
      }
      return "worker ok";
    });
    assertEquals("attempt 1 initialized=false value=100.0", result.chief());
    assertEquals(2, result.stageAttempts());
    assertTrue(result.recoveredFailures().toString().contains("injected failure of worker 1"), result.recoveredFailures().toString());
  }

  @Test
  void workerThatThrows_failsNamingRoleIndexHostAttempt_withTheRemoteStack_andRecreatesLocally() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    WORKER_ONE_RUNS.set(0);
    WorkerFunction<Integer, Integer> fn = ctx -> {
      int sum = 0;
      if (ctx.index() == 1) {
        WORKER_ONE_RUNS.incrementAndGet();
      }
      while (ctx.data().hasNext()) {
        int row = ctx.data().next();
        if (ctx.index() == 1 && sum > 0) {
          throw new IllegalArgumentException("bad row " + row + " in worker " + ctx.index());
        }
        sum += row + 1;
      }
      return sum;
    };
    long t0 = System.nanoTime();
    TrainingFailure failure = assertThrows(TrainingFailure.class, () -> new TrainingCluster(sc, spec).run(numbers(12), fn));
    assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "failed within seconds, not after Spark's retries");
    assertEquals(1, WORKER_ONE_RUNS.get(), "a deterministic error is not retried");
    assertEquals(0, failure.attempt());
    assertTrue(failure.getMessage().endsWith("(not retried: another attempt would meet the same error)"),
        failure.getMessage());
    assertEquals(Role.WORKER, failure.role());
    assertEquals(1, failure.index());
    assertEquals("127.0.0.1", failure.host());
    assertTrue(failure.getMessage().startsWith("worker 1 on 127.0.0.1 (stage attempt "), failure.getMessage());
    assertTrue(failure.getMessage().contains("java.lang.IllegalArgumentException: bad row"), failure.getMessage());
    RemoteException remote = failure.remote();
    assertEquals("java.lang.IllegalArgumentException", remote.remoteClassName());
    StackTraceElement top = remote.getStackTrace()[0];
    assertEquals(TrainingClusterTest.class.getName(), top.getClassName(), "the remote stack starts in this test's "
        + "worker function: " + top);
    assertTrue(top.getMethodName().startsWith("lambda$workerThatThrows"), top.toString());

    IllegalArgumentException local = assertThrows(IllegalArgumentException.class, failure::recreateLocally);
    assertTrue(local.getMessage().startsWith("bad row") && local.getMessage().endsWith("in worker 1"), local.getMessage());
  }

  @Test
  void transientFailures_areRetried_upToMaxStageAttempts() {
    WORKER_ONE_RUNS.set(0);
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optMaxStageAttempts(2).build();
    TrainingFailure failure = assertThrows(TrainingFailure.class, () -> new TrainingCluster(sc, spec).run(numbers(4),
        ctx -> {
          if (ctx.index() == 1) {
            WORKER_ONE_RUNS.incrementAndGet();
            throw new java.io.UncheckedIOException(new java.net.ConnectException("injected: connection refused"));
          }
          ctx.barrier(); // the chief waits for its peer, which never arrives in this attempt
          return 0;
        }));
    assertEquals(2, WORKER_ONE_RUNS.get(), "one retry, then the limit");
    assertEquals(0, failure.attempt(), "the failure named is the first one, of stage attempt 0");
    assertTrue(failure.getMessage().startsWith("worker 1 on " + failure.host() + " (stage attempt 0) failed: "),
        failure.getMessage());
    assertEquals(1, failure.index());
    assertTrue(failure.getMessage().contains("injected: connection refused"), failure.getMessage());
    assertTrue(failure.getMessage().endsWith("(the barrier stage failed in 2 attempts; the last one because worker 1 on "
        + failure.host() + " failed: java.io.UncheckedIOException: java.net.ConnectException: injected: connection "
        + "refused)"), failure.getMessage());
  }

  @Test
  void maxStageAttempts_belowOne_isRefusedNamingTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ClusterSpec.builder().setNumPs(1).setNumWorkers(1).optMaxStageAttempts(0).build());
    assertEquals("maxStageAttempts must be >= 1, got 0", e.getMessage());
  }

  @Test
  void notEnoughSlots_failsBeforeLaunch_sayingHowManyAreNeeded() {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(2).setNumWorkers(4).optEvaluator(true).build();
    long t0 = System.nanoTime();
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> new TrainingCluster(sc, spec)
        .withEvaluator(ctx -> { }).runAsync(numbers(4), ctx -> 1));
    assertTrue(System.nanoTime() - t0 < 10_000_000_000L);
    assertTrue(e.getMessage().contains("needs 7 task slots") && e.getMessage().contains("has 6"), e.getMessage());
  }

  @Test
  void runAsync_returnsAtOnce_showsProgressAndInspect_andCancels() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(2).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(50)).build();
    TrainingJob<Integer> job = new TrainingCluster(sc, spec).runAsync(numbers(4), ctx -> {
      ctx.ps().create(VariableSpec.of("w", 300, 300));
      if (ctx.isChief()) {
        ctx.ps().initializeAll();
      }
      for (long step = 0; !org.apache.spark.TaskContext.get().isInterrupted(); step++) {
        ctx.progress().report(step, step * 10, Map.of("loss", 1.0 / (step + 1)));
        Thread.sleep(20);
      }
      return 0;
    });
    assertTrue(!job.isDone());
    long deadline = System.nanoTime() + 60_000_000_000L;
    ClusterView view = job.inspect();
    while ((view.variables().isEmpty() || view.roles().stream().noneMatch(r -> r.role() == Role.WORKER && r.step() > 2))
        && System.nanoTime() < deadline) {
      Thread.sleep(50);
      view = job.inspect();
    }
    assertEquals(JobStatus.RUNNING, job.status());
    assertEquals(2, view.variables().size(), "w is split over both ps shards: " + view);
    assertEquals(2, view.roles().stream().filter(r -> r.role() == Role.PS).count(), view.toString());
    assertTrue(view.toString().contains("CHIEF"), view.toString());
    job.cancel();
    assertThrows(java.util.concurrent.CancellationException.class, () -> job.get(Duration.ofSeconds(60)));
    assertEquals(JobStatus.CANCELLED, job.status());
  }

  @Test
  void failingEvaluator_doesNotStopTraining_andIsReported() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optEvaluator(true).build();
    RunResult<Integer> result = new TrainingCluster(sc, spec).withEvaluator(ctx -> {
      throw new IllegalStateException("evaluator broke");
    }).run(numbers(4), ctx -> {
      Thread.sleep(300);
      return ctx.index();
    });
    assertEquals(List.of(0, 1), result.results());
    assertTrue(result.recoveredFailures().toString().contains("evaluator 0") 
        && result.recoveredFailures().toString().contains("evaluator broke"), result.recoveredFailures().toString());
  }

  @Test
  void dataFrame_eachWorkerGetsItsPartitionOfTheRows() throws Exception {
    SparkSession spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    Dataset<Row> df = spark.range(0, 100).toDF("id");
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(3).build();
    RunResult<Long> result = new TrainingCluster(spark, spec).run(df, ctx -> {
      long sum = 0;
      while (ctx.data().hasNext()) {
        sum += ctx.data().next().getLong(0);
      }
      return sum;
    });
    assertEquals(3, result.results().size());
    assertEquals(4950L, result.results().stream().mapToLong(Long::longValue).sum());
    assertTrue(result.results().stream().allMatch(s -> s > 0), "every worker got rows: " + result.results());
  }

  @Test
  void afterRuns_successFailureAndCancel_noThreadsAreLeft() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
    // The same runs once first: classes loaded, Spark's lazily started pools running (the DAG
    // scheduler's message timer starts with a cancel or a failed stage).
    succeedFailAndCancel(spec);
    // gRPC's shared pools go 1 s after their last user: then no SparkPS or gRPC thread may be left.
    java.util.Map<Long, io.sparkps.ps.testing.ThreadDump.Info> before = io.sparkps.ps.testing.ThreadDump.ofThisJvm();
    for (long end = System.nanoTime() + 10_000_000_000L; System.nanoTime() < end
        && !io.sparkps.ps.testing.ThreadDump.ours(before).isEmpty(); Thread.sleep(100)) {
      before = io.sparkps.ps.testing.ThreadDump.ofThisJvm();
    }
    assertEquals(List.of(), io.sparkps.ps.testing.ThreadDump.ours(before), "SparkPS or gRPC threads after the first runs");
    succeedFailAndCancel(spec);
    assertEquals(List.of(), io.sparkps.ps.testing.ThreadDump.awaitLeftSince(before, Duration.ofSeconds(20)),
        "threads of any name left by the runs");
  }

  /** A run that succeeds, one that fails, and one cancelled while it runs. */
  private void succeedFailAndCancel(ClusterSpec spec) throws Exception {
    new TrainingCluster(sc, spec).run(numbers(4), ctx -> ctx.index());
    assertThrows(TrainingFailure.class, () -> new TrainingCluster(sc, spec).run(numbers(4), ctx -> {
      throw new IllegalStateException("always");
    }));
    TrainingJob<Integer> cancelled = new TrainingCluster(sc, spec).runAsync(numbers(4), ctx -> {
      while (!org.apache.spark.TaskContext.get().isInterrupted()) {
        Thread.sleep(20);
      }
      return 0;
    });
    long running = System.nanoTime() + 60_000_000_000L;
    while (cancelled.status() != JobStatus.RUNNING && System.nanoTime() < running) {
      Thread.sleep(20);
    }
    cancelled.cancel();
    assertThrows(java.util.concurrent.CancellationException.class, () -> cancelled.get(Duration.ofSeconds(60)));
  }
}
