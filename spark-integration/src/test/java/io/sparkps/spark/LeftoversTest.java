package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.testing.ThreadDump;
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
 * executors ({@code local-cluster}): no thread (of any name: the whole thread set is compared, see
 * {@link ThreadDump#leftSince}), no listening port, no open connection, no file.
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

  /** What one process holds: its threads, listening ports, sockets, SparkPS files in the temp directory. */
  private record Holdings(long pid, Map<Long, ThreadDump.Info> threads, int listening, int sockets, int files) {
    boolean within(Holdings base) {
      return ThreadDump.leftSince(base.threads, threads).isEmpty() && listening <= base.listening
          && sockets <= base.sockets + 4 && files <= base.files;
    }

    /** The same threads, ports, sockets and files as {@code other} (stacks aside). */
    boolean same(Holdings other) {
      return other != null && threads.keySet().equals(other.threads.keySet()) && listening == other.listening
          && sockets == other.sockets && files == other.files;
    }

    @Override
    public String toString() {
      return "pid " + pid + ": " + threads.size() + " threads, " + listening + " listening, " + sockets + " sockets, "
          + files + " files";
    }
  }

  private static Holdings holdings(long pid) throws IOException, InterruptedException {
    Path proc = Path.of("/proc", Long.toString(pid));
    Map<Long, ThreadDump.Info> threads = ThreadDump.of(pid);
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

  private static Map<String, Holdings> everyProcess() throws IOException, InterruptedException {
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
    // A run that succeeds and one whose stage is retried first: each JVM loads its classes, and Spark starts
    // the pools it starts at first use (the DAG scheduler's retry timer among them).
    run(4).get(Duration.ofMinutes(2));
    assertThrows(TrainingFailure.class, () -> run(3).get(Duration.ofMinutes(2)));
    Map<String, Holdings> before = settle(everyProcess(), null);
    before.forEach((process, h) -> assertEquals(List.of(), ThreadDump.ours(h.threads()),
        process + ": SparkPS or gRPC threads once the first runs ended"));
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
        process + " holds more than before " + FITS + " failed runs: " + after.get(process) + " vs " + base
            + "; threads left: " + ThreadDump.leftSince(base.threads(), after.get(process).threads())));
  }

  /**
   * Polls (up to 20 s) until every process holds no more than {@code base}, or without a base
   * until they hold steady; returns what they hold then.
   */
  private static Map<String, Holdings> settle(Map<String, Holdings> now, Map<String, Holdings> base)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (System.nanoTime() < deadline) {
      Map<String, Holdings> current = everyProcess();
      Map<String, Holdings> last = now;
      // Without a base: until two looks agree and no SparkPS or gRPC thread is left (gRPC ends its
      // shared executor a second after its last channel closes).
      if (base == null ? current.keySet().equals(last.keySet()) && current.entrySet().stream()
          .allMatch(e -> e.getValue().same(last.get(e.getKey())) && ThreadDump.ours(e.getValue().threads()).isEmpty())
          : current.entrySet().stream()
          .allMatch(e -> base.containsKey(e.getKey()) && e.getValue().within(base.get(e.getKey())))) {
        return current;
      }
      now = current;
      Thread.sleep(500);
    }
    return now;
  }
}
