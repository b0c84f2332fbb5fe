package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.tls.PsTls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seed example with every role in executor JVMs of their own: Spark's {@code local-cluster}
 * master, with a SPARK_HOME whose {@code jars/} folder this test builds from its own class path.
 * Each of its 2 executors has 3 cores and one GPU-like custom resource ({@code gpu}, found by a
 * discovery script): with task resource profiles the ps and the evaluator hold none, each worker
 * its executor's. A task takes half a GPU by default on Spark 4, as a cluster shares one between a
 * ps and a worker, and a whole one on Spark 3.5, which would count a worker's whole GPU as half
 * ({@link RoleProfiles}'s caveat).
 */
class LocalClusterTest {
  @TempDir
  static Path home;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() throws IOException {
    Path script = home.resolve("gpus.sh");
    Files.writeString(script, "#!/bin/sh\necho '{\"name\": \"gpu\", \"addresses\": [\"0\"]}'\n");
    script.toFile().setExecutable(true);
    sc = LocalClusters.start(home, 2, 3, 1024, LocalClusters.conf().set("spark.worker.resource.gpu.amount", "1")
        .set("spark.worker.resource.gpu.discoveryScript", script.toString())
        .set("spark.executor.resource.gpu.amount", "1")
        .set("spark.task.resource.gpu.amount", org.apache.spark.package$.MODULE$.SPARK_VERSION().startsWith("3.")
            ? "1" : "0.5"));
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
  }

  @Test
  void seedExample_inSeparateExecutorJvms_endsAtTen() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optEvaluator(true)
        .optHeartbeatInterval(Duration.ofMillis(100)).build();
    java.util.Map<Integer, String> stageJobs = new java.util.concurrent.ConcurrentHashMap<>();
    java.util.Map<String, String> executorOfJob = new java.util.concurrent.ConcurrentHashMap<>();
    List<String> tasks = new java.util.concurrent.CopyOnWriteArrayList<>();
    org.apache.spark.scheduler.SparkListener listener = new org.apache.spark.scheduler.SparkListener() {
      @Override
      public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart start) {
        String description = String.valueOf(start.properties().getProperty("spark.job.description"));
        for (scala.collection.Iterator<Object> ids = start.stageIds().iterator(); ids.hasNext(); ) {
          stageJobs.put((Integer) ids.next(), description); // (a Scala iterator: the same in 2.12 and 2.13)
        }
      }

      @Override
      public void onTaskStart(org.apache.spark.scheduler.SparkListenerTaskStart task) {
        executorOfJob.putIfAbsent(stageJobs.getOrDefault(task.stageId(), "?"), task.taskInfo().executorId());
        tasks.add("start " + stageJobs.getOrDefault(task.stageId(), "?") + " on " + task.taskInfo().executorId());
      }

      @Override
      public void onTaskEnd(org.apache.spark.scheduler.SparkListenerTaskEnd task) {
        tasks.add("end " + stageJobs.getOrDefault(task.stageId(), "?") + " on " + task.taskInfo().executorId() + ": "
            + task.reason());
      }
    };
    sc.sc().addSparkListener(listener);
    TrainingJob<Float> job = new TrainingCluster(sc, spec).withEvaluator(TrainingClusterTest::pollingEvaluator)
        .runAsync(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2), TrainingClusterTest::seedWorker);
    RunResult<Float> result = job.get(Duration.ofMinutes(3));
    assertEquals(List.of(10f, 10f), result.results());
    // What Spark gave each task: the ps and the evaluator a core and no GPU, each worker a core and its executor's GPU.
    Map<String, String> held = new TreeMap<>();
    job.inspect().resources().forEach(r -> held.put(r.role() + " " + r.index(), r.cpus() + " " + r.resources()));
    assertEquals(Map.of("PS 0", "1 {}", "EVALUATOR 0", "1 {}", "CHIEF 0", "1 {gpu=[0]}", "WORKER 1", "1 {gpu=[0]}"),
        held);
    Set<String> workerExecutors = job.inspect().resources().stream().filter(r -> r.role() != Role.PS
        && r.role() != Role.EVALUATOR).map(TaskResources::executor).collect(Collectors.toSet());
    assertEquals(2, workerExecutors.size(), "a whole GPU each: the workers on both executors: " + held);
    List<Long> versions = result.evaluatorHistory().stream().map(TaskProgress::step).toList();
    assertEquals(10L, versions.get(versions.size() - 1), "evaluator versions: " + versions);
    Set<String> executors = result.workerHistory().stream().map(TaskProgress::executor).collect(Collectors.toSet());
    assertTrue(!executors.contains("driver") && !executors.isEmpty(), "workers ran in executor JVMs: " + executors);
    sc.sc().listenerBus().waitUntilEmpty(30_000);
    sc.sc().removeSparkListener(listener);
    // No task failed and was retried: the ps tasks among them, which stop while the driver shuts their servers down.
    assertEquals(List.of(), tasks.stream().filter(t -> t.startsWith("end ") && !t.endsWith(": Success")).toList(),
        "tasks that did not succeed: " + tasks);
    assertEquals(1, tasks.stream().filter(t -> t.startsWith("start sparkps ps 0 ")).count(), "one ps task: " + tasks);
    String ps = executorOfJob.entrySet().stream().filter(e -> e.getKey().startsWith("sparkps ps"))
        .map(java.util.Map.Entry::getValue).findFirst().orElse(null);
    assertTrue(ps != null && !ps.equals("driver"), "the ps ran in an executor JVM: " + executorOfJob);
    Set<String> all = new java.util.HashSet<>(executors);
    all.add(ps);
    assertTrue(all.size() >= 2, "at least two executor JVMs: " + tasks);
    // a GPU each: at most one worker shares the ps's executor
    assertTrue(executors.stream().anyMatch(e -> !e.equals(ps)), "a worker ran in another JVM than the ps (" + ps
        + "): " + executors);
  }

  @Test
  void workersAskingForMoreCoresThanAnExecutorHas_areRefusedBeforeLaunch_namingTheirAsk() {
    // (the application's conf, as spark-submit would set it; set on the live context for this case)
    sc.sc().conf().set("spark.sparkps.worker.cpus", "4");
    try {
      ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optPsStartTimeout(Duration.ofSeconds(1))
          .build();
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> new TrainingCluster(sc, spec)
          .runAsync(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2), TrainingClusterTest::seedWorker));
      assertTrue(e.getMessage().startsWith("the run needs 2 worker tasks of 4 cores, 1 gpu each at once, but the "
          + "cluster's executors can run 0 (after waiting 1 s for executors)"), e.getMessage());
    } finally {
      sc.sc().conf().remove("spark.sparkps.worker.cpus");
    }
  }

  @Test
  void workersWithNoRoomTogether_failTheRunAfterTheStartTimeout_namingWhy() throws Exception {
    // Four cores of six held by another job's tasks of a core each; the ps takes a fifth, and the workers'
    // stage, whose two tasks start together or not at all, never finds room.
    Path release = home.resolve("release-cores");
    String flag = release.toString();
    org.apache.spark.resource.ResourceProfile aCore = new org.apache.spark.resource.ResourceProfileBuilder()
        .require(new org.apache.spark.resource.TaskResourceRequests().cpus(1)).build();
    org.apache.spark.api.java.JavaFutureAction<Void> hold = sc.parallelize(List.of(0, 1, 2, 3), 4).withResources(aCore)
        .foreachAsync(x -> {
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (!Files.exists(Path.of(flag)) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
    });
    try {
      long waited = System.nanoTime();
      while (java.util.Arrays.stream(sc.statusTracker().getActiveStageIds()).mapToObj(sc.statusTracker()::getStageInfo)
              .filter(java.util.Objects::nonNull).mapToInt(st -> st.numActiveTasks()).sum() < 4
          && System.nanoTime() - waited < 60_000_000_000L) {
        Thread.sleep(50);
      }
      ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optPsStartTimeout(Duration.ofSeconds(4))
          .optHeartbeatInterval(Duration.ofMillis(100)).build();
      long t0 = System.nanoTime();
      TrainingJob<Float> job = new TrainingCluster(sc, spec)
          .runAsync(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2), TrainingClusterTest::seedWorker);
      TrainingFailure e = assertThrows(TrainingFailure.class, () -> job.get(Duration.ofSeconds(60)));
      long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
      assertTrue(e.getMessage().contains("the workers' barrier stage had no task running for 4 s (the "
          + "ClusterSpec's psStartTimeout) and no worker registered"), e.getMessage());
      assertTrue(seconds < 30, "failed " + seconds + " s after it started");
      assertEquals(JobStatus.FAILED, job.status());
    } finally {
      Files.createFile(release);
      hold.get(60, java.util.concurrent.TimeUnit.SECONDS);
    }
  }

  /** Holds its task until {@code release} exists, so the driver can probe the live ps. */
  private static Float heldWorker(WorkerContext<Integer> ctx, String release) throws Exception {
    ctx.ps().create(VariableSpec.of("counter"));
    if (ctx.isChief()) {
      ctx.ps().initializeAll();
    }
    ctx.ps().awaitInitialized(List.of("counter"), Duration.ofSeconds(30));
    ctx.ps().assignAdd("counter", 1.0);
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (!Files.exists(Path.of(release)) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    ctx.barrier(); // both have added
    return ctx.ps().read("counter").value().getFloat(0);
  }

  @Test
  void acrossJvms_everyChannelIsTls_byDefault_soAPlaintextPeerWithTheRightAddressGetsNowhere() throws Exception {
    Path release = home.resolve("release-tls");
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(100))
        .build();
    String flag = release.toString();
    TrainingJob<Float> job = new TrainingCluster(sc, spec)
        .runAsync(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2), ctx -> heldWorker(ctx, flag));
    try {
      assertTrue(job.tls(), "TLS is on for local-cluster without being asked");
      String ps = null;
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (ps == null && System.nanoTime() < deadline) {
        ps = job.inspect().roles().stream().filter(r -> r.role() == Role.PS && r.message().startsWith("serving at "))
            .map(r -> r.message().substring("serving at ".length()).split(",")[0]).findFirst().orElse(null);
        Thread.sleep(50);
      }
      assertTrue(ps != null, "the ps reported where it serves: " + job.inspect());
      try (PsClient plaintext = PsClient.builder().setShards(List.of(ps)).setToken(PsToken.generate())
               .optCallTimeout(Duration.ofSeconds(5)).build();
           PsClient wrongCertificate = PsClient.builder().setShards(List.of(ps)).setToken(PsToken.generate())
               .optTls(PsTls.generate()).optCallTimeout(Duration.ofSeconds(5)).build()) {
        // Without TLS on the ps, the plaintext client would get as far as the token check (PsAuthenticationException).
        assertThrows(PsUnavailableException.class, plaintext::listVariables);
        assertThrows(PsUnavailableException.class, wrongCertificate::listVariables);
      }
    } finally {
      Files.createFile(release);
    }
    assertEquals(List.of(2f, 2f), job.get(Duration.ofMinutes(2)).results(), "the run itself trained over TLS");
  }
}
