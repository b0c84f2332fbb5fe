package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.ps.Initializer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.VariableSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Twenty failed runs in one application leave nothing of SparkPS behind, in the driver or in the
 * executors ({@code local-cluster}): no thread, no listening port, no open connection, no file.
 * The runs fail in the ways that left threads before: a worker's exception while its peer waits in
 * a SYNC bulk read, a deterministic error at once, a cancel mid-training, a transient error retried
 * until the attempts run out.
 */
class LeftoversTest {
  private static final int FITS = 20;
  @TempDir
  static Path home;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() throws IOException {
    sc = LocalClusters.start(home, 2, 2, 1024, LocalClusters.conf());
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
  }

  /** What one process holds: SparkPS threads, listening ports, sockets, SparkPS files in the temp directory. */
  private record Holdings(long pid, int sparkpsThreads, int listening, int sockets, int files) {
    boolean within(Holdings base) {
      return sparkpsThreads <= base.sparkpsThreads && listening <= base.listening && sockets <= base.sockets + 4
          && files <= base.files;
    }
  }

  private static Holdings holdings(long pid) throws IOException {
    Path proc = Path.of("/proc", Long.toString(pid));
    int threads = 0;
    try (Stream<Path> tasks = Files.list(proc.resolve("task"))) {
      for (Path t : tasks.toList()) {
        try {
          threads += Files.readString(t.resolve("comm")).startsWith("sparkps") ? 1 : 0;
        } catch (IOException gone) {
          // the thread ended while we looked
        }
      }
    }
    Set<String> sockets = new HashSet<>();
    try (Stream<Path> fds = Files.list(proc.resolve("fd"))) {
      for (Path fd : fds.toList()) {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          if (target.startsWith("socket:[")) {
            sockets.add(target.substring(8, target.length() - 1));
          }
        } catch (IOException gone) {
          // closed while we looked
        }
      }
    }
    int listening = 0;
    for (String table : List.of("tcp", "tcp6")) {
      for (String line : Files.readAllLines(proc.resolve("net").resolve(table))) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 9 && "0A".equals(f[3]) && sockets.contains(f[9])) {
          listening++;
        }
      }
    }
    int files;
    try (Stream<Path> tmp = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      files = (int) tmp.filter(p -> p.getFileName().toString().toLowerCase().contains("sparkps")).count();
    }
    return new Holdings(pid, threads, listening, sockets.size(), files);
  }

  private static Map<String, Holdings> everyProcess() throws IOException {
    Map<String, Holdings> all = new LinkedHashMap<>();
    all.put("driver", holdings(ProcessHandle.current().pid()));
    for (String id : scala.collection.JavaConverters.seqAsJavaList(sc.sc().getExecutorIds())) {
      all.put("executor " + id, holdings(LocalClusters.executorProcess(sc, id).pid()));
    }
    return all;
  }

  /** SYNC steps on a 2 MiB variable (bulk reads); worker {@code failing} throws at step 3 if >= 0. */
  static Integer syncWorker(WorkerContext<Integer> ctx, int failing, boolean slow) throws Exception {
    PsClient ps = ctx.ps();
    ps.createGroup(ConsistencyGroup.sync("g", ctx.numWorkers()));
    ps.create(VariableSpec.builder().setName("w").setShape(1024, 512).optInitializer(Initializer.zeros())
        .optGroup("g").build());
    if (ctx.isChief()) {
      ps.initializeAll();
    }
    ps.awaitInitialized(List.of("w"), Duration.ofSeconds(60));
    INDArray w = Nd4j.create(DataType.FLOAT, 1024, 512);
    INDArray g = Nd4j.ones(DataType.FLOAT, 1024, 512);
    for (int step = 0; step < (slow ? 100_000 : 6); step++) {
      if (ctx.index() == failing && step == 3) {
        throw new IllegalStateException("injected failure at step 3");
      }
      ps.pullInto(Map.of("w", w));
      ps.push(Map.of("w", g));
      if (slow) {
        Thread.sleep(20);
      }
    }
    return 0;
  }

  private static TrainingJob<Integer> run(int kind) {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optMaxStageAttempts(2)
        .optHeartbeatInterval(Duration.ofMillis(200)).build();
    WorkerFunction<Integer, Integer> f = switch (kind) {
      case 0 -> ctx -> syncWorker(ctx, 1, false);
      case 4 -> ctx -> syncWorker(ctx, -1, false);
      case 1 -> ctx -> {
        throw new IllegalArgumentException("injected deterministic failure");
      };
      case 2 -> ctx -> syncWorker(ctx, -1, true);
      default -> ctx -> {
        throw new java.net.SocketException("injected transient failure");
      };
    };
    return new TrainingCluster(sc, spec).runAsync(sc.parallelize(IntStream.range(0, 4).boxed().toList(), 2), f);
  }

  @Test
  void twentyFailedRuns_leaveNoThreadPortConnectionOrFile() throws Exception {
    run(4).get(Duration.ofMinutes(2)); // a run that succeeds first: each JVM loads its classes and pools
    Map<String, Holdings> before = settle(everyProcess(), null);
    List<String> outcomes = new ArrayList<>();
    for (int i = 0; i < FITS; i++) {
      TrainingJob<Integer> job = run(i % 4);
      if (i % 4 == 2) {
        Thread.sleep(1500);
        job.cancel();
      }
      Exception e = assertThrows(Exception.class, () -> job.get(Duration.ofMinutes(2)));
      assertTrue(e instanceof TrainingFailure || e instanceof CancellationException, e.toString());
      outcomes.add(e.getClass().getSimpleName());
    }
    Map<String, Holdings> after = settle(everyProcess(), before);
    System.out.println("after " + FITS + " failed runs: " + outcomes + "\n  before " + before + "\n  after  " + after);
    assertEquals(before.keySet(), after.keySet(), "the same processes");
    before.forEach((process, base) -> assertTrue(after.get(process).within(base),
        process + " holds more than before " + FITS + " failed runs: " + after.get(process) + " vs " + base));
  }

  /** Polls (up to 20 s) until every process holds no more than {@code base}; returns what they hold then. */
  private static Map<String, Holdings> settle(Map<String, Holdings> now, Map<String, Holdings> base)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (System.nanoTime() < deadline) {
      Map<String, Holdings> current = everyProcess();
      if (base == null ? current.equals(now) : current.entrySet().stream()
          .allMatch(e -> base.containsKey(e.getKey()) && e.getValue().within(base.get(e.getKey())))) {
        return current;
      }
      now = current;
      Thread.sleep(500);
    }
    return now;
  }
}
