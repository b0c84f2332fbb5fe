package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.StepParts;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A shard that dies while two workers train is replaced: the clients move to the replacement over
 * real sockets, one refills it from its last-pulled copy, and training ends with every step counted
 * on the surviving shard exactly once.
 */
class ShardRecoveryTest {
  private static final int STEPS = 30;
  private static final int KILL_AT = 10;
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new CopyOnWriteArrayList<>();
  private final ExecutorService pool = Executors.newCachedThreadPool();

  /** The supervisor's side, as a test: where shard 1 serves now, and what the clients reported. */
  private final class Supervisor implements ShardRecovery {
    volatile String shard1;
    final List<String> restored = new CopyOnWriteArrayList<>();

    @Override
    public String awaitReplacement(int shard, String lost) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (System.nanoTime() < deadline) {
        String now = shard == 1 ? shard1 : servers.get(0).address();
        if (!now.equals(lost)) {
          return now;
        }
        if (shard == 0) {
          return null; // shard 0 never moves: the failure stands
        }
        Thread.sleep(20);
      }
      throw new PsUnavailableException("no replacement of ps " + shard + " within 30 s", null);
    }

    @Override
    public void restored(int shard, long step, String source) {
      restored.add(shard + "@" + step + ": " + source);
    }
  }

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    servers.forEach(ParameterServer::close);
  }

  private ParameterServer server(int shard) {
    ParameterServer ps = ParameterServer.builder().setShardIndex(shard).setToken(token).optHost("127.0.0.1").build().start();
    servers.add(ps);
    return ps;
  }

  private PsClient client(List<String> addresses, int worker, ShardRecovery recovery) {
    return PsClient.builder().setShards(addresses).setToken(token).optWorker(worker).optSplitBytes(64)
        .optCallTimeout(Duration.ofSeconds(20)).optWaitTimeout(Duration.ofSeconds(30)).optRecovery(recovery).build();
  }

  private static VariableSpec weights(String group) {
    return VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(1))
        .optOptimizer(OptimizerConfig.sgd(0.5)).optGroup(group).build();
  }

  /** One worker's training step: {@code held} is its copy of each variable, as it pulls them. */
  private interface Step {
    void run(PsClient ps, Map<String, INDArray> held);
  }

  /**
   * Runs two workers for {@link #STEPS} steps each (pull, push a gradient of ones); shard 1 is closed
   * once worker 0 reached {@link #KILL_AT} and its replacement starts 300 ms later.
   */
  private Supervisor train(ConsistencyGroup group) throws Exception {
    return train(group, List.of(weights(group.name())), (ps, held) -> {
      ps.pullInto(held);
      ps.push(Map.of("w", Nd4j.ones(DataType.FLOAT, 8, 4)));
    });
  }

  /** As above, with these variables and steps. */
  private Supervisor train(ConsistencyGroup group, List<VariableSpec> specs, Step step) throws Exception {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    Supervisor supervisor = new Supervisor();
    supervisor.shard1 = s1.address();
    List<String> addresses = List.of(s0.address(), s1.address());
    CountDownLatch created = new CountDownLatch(1);
    List<Future<Long>> workers = new ArrayList<>();
    for (int w = 0; w < 2; w++) {
      int worker = w;
      workers.add(pool.submit(() -> {
        try (PsClient ps = client(addresses, worker, supervisor)) {
          ps.createGroup(group);
          ps.create(specs);
          if (worker == 0) {
            ps.initializeAll();
            created.countDown();
          } else {
            created.await();
          }
          Map<String, INDArray> held = new java.util.LinkedHashMap<>();
          specs.forEach(v -> held.put(v.name(), Nd4j.create(DataType.FLOAT, v.shape())));
          for (int t = 0; t < STEPS; t++) {
            if (worker == 0 && t == KILL_AT) {
              s1.close();
              pool.submit(() -> {
                Thread.sleep(300);
                supervisor.shard1 = server(1).address();
                return null;
              });
            }
            step.run(ps, held);
          }
          return ps.step();
        }
      }));
    }
    for (Future<Long> f : workers) {
      assertEquals(STEPS, f.get(60, TimeUnit.SECONDS));
    }
    return supervisor;
  }

  /**
   * Steps whose transfers go in parts (as layer by layer): the copy a worker refills the replacement
   * from is the union of its parts. Variable a lives on the shard that is lost and is pulled before b:
   * a copy of the last part alone (b) would not cover the lost shard, and no worker could refill it.
   */
  @Test
  void syncStepsInParts_refillTheReplacementFromTheUnionOfTheParts() throws Exception {
    List<VariableSpec> specs = new ArrayList<>();
    for (String name : List.of("a", "b")) {
      specs.add(VariableSpec.builder().setName(name).setShape(8).optInitializer(Initializer.constant(1))
          .optOptimizer(OptimizerConfig.sgd(0.5)).optGroup("g").optPinnedShard(name.equals("a") ? 1 : 0).build());
    }
    Supervisor supervisor = train(ConsistencyGroup.sync("g", 2), specs, (ps, held) -> {
      StepParts parts = GrpcPsClient.of(ps).stepParts();
      parts.pull(Map.of("a", held.get("a")));
      parts.pull(Map.of("b", held.get("b")));
      parts.push(Map.of("b", Nd4j.ones(DataType.FLOAT, 8)));
      parts.push(Map.of("a", Nd4j.ones(DataType.FLOAT, 8)));
      parts.end();
    });
    try (PsClient reader = client(List.of(servers.get(0).address(), supervisor.shard1), 0, supervisor)) {
      VariableValue b = reader.read("b");
      assertEquals(1 - 0.5f * STEPS, b.value().getFloat(0), 1e-5, "b, on the surviving shard: every step once");
      VariableValue a = reader.read("a");
      float lost = (a.value().getFloat(0) - (1 - 0.5f * STEPS)) / 0.5f;
      assertTrue(lost >= 1 && lost <= 2, "steps lost on the replaced shard: " + lost);
      assertEquals(STEPS, a.version(), "the replacement counts every SYNC step");
    }
    assertEquals(1, supervisor.restored.size(), supervisor.restored.toString());
    assertTrue(supervisor.restored.get(0).matches("1@(9|10|11): worker [01]'s copy of step \\d+ \\[a\\]"),
        supervisor.restored.get(0));
  }

  private VariableValue read(ShardRecovery supervisor, String shard1) {
    try (PsClient reader = client(List.of(servers.get(0).address(), shard1), 0, supervisor)) {
      return reader.read("w");
    }
  }

  @Test
  void syncTrainingGoesOnOnTheReplacementWithTheSurvivorUntouched() throws Exception {
    Supervisor supervisor = train(ConsistencyGroup.sync("g", 2));
    VariableValue w = read(supervisor, supervisor.shard1);
    float[] values = w.value().data().asFloat();
    // Rows 0-3 live on shard 0: every SYNC step applied once: 1 - 0.5 * 30.
    for (int i = 0; i < 16; i++) {
      assertEquals(1 - 0.5f * STEPS, values[i], 1e-5, "element " + i + " on the surviving shard");
    }
    // Rows 4-7 on the replacement: refilled from a worker's copy, then the later steps; the step or
    // two whose sums died with the old shard are missing, no more.
    float lost = (values[16] - (1 - 0.5f * STEPS)) / 0.5f;
    assertTrue(lost >= 1 && lost <= 2, "steps lost on the replaced shard: " + lost);
    for (int i = 16; i < 32; i++) {
      assertEquals(values[16], values[i], 1e-6);
    }
    assertEquals(STEPS, w.version(), "both shards count every SYNC step");
    assertEquals(1, supervisor.restored.size(), supervisor.restored.toString());
    assertTrue(supervisor.restored.get(0).matches("1@(9|10|11): worker [01]'s copy of step \\d+ \\[w\\]"),
        supervisor.restored.get(0));
  }

  @Test
  void asyncPushesReachTheSurvivorOnceAndTheReplacementAfterItsRefill() throws Exception {
    Supervisor supervisor = train(ConsistencyGroup.async("g"));
    float[] values = read(supervisor, supervisor.shard1).value().data().asFloat();
    for (int i = 0; i < 16; i++) {
      assertEquals(1 - 0.5f * 2 * STEPS, values[i], 1e-5, "a retried push was applied twice on the surviving shard");
    }
    // The replacement starts from the restoring worker's last pull: pushes the other worker made to
    // the old shard since then are gone (ASYNC workers run apart), at most all of its own.
    float lost = (values[16] - (1 - 0.5f * 2 * STEPS)) / 0.5f;
    assertTrue(lost >= 0 && lost <= STEPS, "pushes lost on the replaced shard: " + lost);
    assertEquals(1, supervisor.restored.size(), supervisor.restored.toString());
  }
  /** A client's side of the supervisor that refills or only waits, and may hold its answer. */
  private static final class Hook implements ShardRecovery {
    private final java.util.function.Supplier<String> where;
    private final boolean refills;
    private final Runnable beforeAnswer;
    final List<String> restored = new CopyOnWriteArrayList<>();

    Hook(java.util.function.Supplier<String> where, boolean refills, Runnable beforeAnswer) {
      this.where = where;
      this.refills = refills;
      this.beforeAnswer = beforeAnswer;
    }

    @Override
    public String awaitReplacement(int shard, String lost) {
      beforeAnswer.run();
      return where.get();
    }

    @Override
    public boolean refills() {
      return refills;
    }

    @Override
    public Duration refillWait() {
      return Duration.ofSeconds(20);
    }

    @Override
    public void restored(int shard, long step, String source) {
      restored.add(shard + "@" + step + ": " + source);
    }
  }

  /**
   * The race users met: a reader that learned the variables from the shards (an evaluator) finds
   * the replacement first, and a training worker refills it after. The worker is held until the
   * reader has had its turn at the replacement (its variables created there, or 3 s passed), so
   * the order is the one that failed: the worker's create met the reader's spec with another
   * initializer ("already exists ... with a different spec") and the run ended.
   */
  @Test
  void refill_afterAReaderReachedTheReplacementFirst_isAgreedAndTheReaderGetsTheWorkersCopy() throws Exception {
    ParameterServer old = server(0);
    java.util.concurrent.atomic.AtomicReference<String> now = new java.util.concurrent.atomic.AtomicReference<>(
        old.address());
    CountDownLatch readerAsked = new CountDownLatch(1);
    Hook readerHook = new Hook(now::get, false, readerAsked::countDown);
    Hook workerHook = new Hook(now::get, true, () -> awaitCreatedOrTimeout(readerAsked, now.get()));
    INDArray initial = Nd4j.rand(DataType.FLOAT, 8, 4);
    INDArray copy = Nd4j.create(DataType.FLOAT, 8, 4);
    try (PsClient worker = client(List.of(old.address()), 0, workerHook);
        PsClient reader = client(List.of(old.address()), 1, readerHook)) {
      worker.create(VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.values(initial))
          .optOptimizer(OptimizerConfig.sgd(0.5)).build());
      worker.initializeAll();
      worker.push(Map.of("w", Nd4j.ones(DataType.FLOAT, 8, 4)));
      worker.pullInto(Map.of("w", copy)); // the worker's copy: initial - 0.5
      assertEquals(initial.sub(0.5), reader.pull("w")); // the reader learned 'w' from the shard
      old.close();
      now.set(server(0).address());
      Future<INDArray> read = pool.submit(() -> reader.pull("w"));
      assertTrue(readerAsked.await(30, TimeUnit.SECONDS), "the reader never asked for the replacement");
      worker.pullInto(Map.of("w", copy)); // fails at the old shard, moves, refills
      assertEquals(initial.sub(0.5), copy, "the worker pulled its own refill");
      assertEquals(initial.sub(0.5), read.get(30, TimeUnit.SECONDS), "the reader waited for the worker's refill");
    }
    assertEquals(1, workerHook.restored.size(), workerHook.restored.toString());
    assertTrue(workerHook.restored.get(0).matches("0@\\d+: worker 0's copy of step \\d+ \\[w\\]"),
        workerHook.restored.toString());
    assertEquals(List.of(), readerHook.restored);
  }

  /**
   * A worker that has not pulled yet (a new stage attempt's, say) meets the replacement first: it
   * has only the initializers, which would put fresh values beside trained ones. It waits, and the
   * worker holding a copy refills; before, the first one's initial values won and the copy was dropped.
   */
  @Test
  void aWorkerWithoutACopy_waitsForTheRefillOfOneWithACopy_neverRefillsFromInitializers() throws Exception {
    ParameterServer old = server(0);
    java.util.concurrent.atomic.AtomicReference<String> now = new java.util.concurrent.atomic.AtomicReference<>(
        old.address());
    CountDownLatch freshAsked = new CountDownLatch(1);
    Hook freshHook = new Hook(now::get, true, freshAsked::countDown);
    Hook copyHook = new Hook(now::get, true, () -> {
      try {
        freshAsked.await(30, TimeUnit.SECONDS);
        Thread.sleep(1000); // the worker without a copy has had its turn at the replacement
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    INDArray initial = Nd4j.rand(DataType.FLOAT, 8, 4);
    VariableSpec spec = VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.values(initial))
        .optOptimizer(OptimizerConfig.sgd(0.5)).build();
    INDArray copy = Nd4j.create(DataType.FLOAT, 8, 4);
    try (PsClient trained = client(List.of(old.address()), 0, copyHook);
        PsClient fresh = client(List.of(old.address()), 1, freshHook)) {
      trained.create(spec);
      trained.initializeAll();
      trained.push(Map.of("w", Nd4j.ones(DataType.FLOAT, 8, 4)));
      trained.pullInto(Map.of("w", copy)); // initial - 0.5
      fresh.create(spec); // declared, never pulled
      old.close();
      now.set(server(0).address());
      INDArray seen = Nd4j.create(DataType.FLOAT, 8, 4);
      Future<?> freshPull = pool.submit(() -> {
        fresh.pullInto(Map.of("w", seen));
        return null;
      });
      assertTrue(freshAsked.await(30, TimeUnit.SECONDS), "the worker without a copy never asked");
      trained.pullInto(Map.of("w", copy));
      freshPull.get(30, TimeUnit.SECONDS);
      assertEquals(initial.sub(0.5), seen, "the fresh worker reads the trained copy, not the initializers");
      assertEquals(initial.sub(0.5), copy);
    }
    assertEquals(List.of(), freshHook.restored);
    assertEquals(1, copyHook.restored.size(), copyHook.restored.toString());
  }

  /**
   * A refilled shard's Adam starts its moments afresh, and its bias correction with them: the first
   * step after the refill is Adam's first step (the learning rate, for a constant gradient), not one
   * corrected as the 31st (0.58 of it here; about 3x it late in a long run, which cost a point of
   * accuracy in the fault soak).
   */
  @Test
  void afterARefill_adamsFirstStepIsAFirstStep() throws Exception {
    ParameterServer old = server(0);
    java.util.concurrent.atomic.AtomicReference<String> now = new java.util.concurrent.atomic.AtomicReference<>(
        old.address());
    Hook hook = new Hook(now::get, true, () -> { });
    INDArray copy = Nd4j.create(DataType.FLOAT, 8);
    INDArray ones = Nd4j.ones(DataType.FLOAT, 8);
    try (PsClient worker = client(List.of(old.address()), 0, hook)) {
      worker.create(VariableSpec.builder().setName("w").setShape(8).optInitializer(Initializer.zeros())
          .optOptimizer(OptimizerConfig.adam(0.01, 0.9, 0.999, 1e-8)).build());
      worker.initializeAll();
      for (int step = 0; step < 30; step++) {
        worker.push(Map.of("w", ones));
      }
      worker.pullInto(Map.of("w", copy));
      old.close();
      now.set(server(0).address());
      INDArray refilled = Nd4j.create(DataType.FLOAT, 8);
      worker.pullInto(Map.of("w", refilled)); // moves to the replacement and refills it
      assertEquals(copy, refilled);
      worker.push(Map.of("w", ones));
      INDArray after = worker.read("w").value();
      for (int i = 0; i < 8; i++) {
        assertEquals(0.01, refilled.getDouble(i) - after.getDouble(i), 1e-5, "element " + i);
      }
    }
    assertEquals(1, hook.restored.size(), hook.restored.toString());
    assertTrue(hook.restored.get(0).endsWith("; optimizer state started afresh"), hook.restored.toString());
  }

  /**
   * With its optimizer state copied ({@link PsClient#copyOptimizerState()}), a refilled shard's Adam
   * goes on where it was: the step after the refill is the step a shard that never failed takes
   * (moments and bias correction alike), not a first step. The state, 300 floats an array, travels
   * in chunks of 128 both ways; the refill says which step it is of.
   */
  @Test
  void afterARefillFromACopyWithState_adamGoesOnWithItsMoments() throws Exception {
    ParameterServer old = server(0);
    ParameterServer twin = server(0); // the same pushes, never lost
    java.util.concurrent.atomic.AtomicReference<String> now = new java.util.concurrent.atomic.AtomicReference<>(
        old.address());
    Hook hook = new Hook(now::get, true, () -> { });
    VariableSpec spec = VariableSpec.builder().setName("w").setShape(75, 4).optInitializer(Initializer.zeros())
        .optOptimizer(OptimizerConfig.adam(0.01, 0.9, 0.999, 1e-8)).build();
    INDArray copy = Nd4j.create(DataType.FLOAT, 75, 4);
    try (PsClient worker = PsClient.builder().setShards(List.of(old.address())).setToken(token).optWorker(0)
            .optChunkBytes(1024).optCallTimeout(Duration.ofSeconds(20)).optRecovery(hook).build();
        PsClient control = PsClient.builder().setShards(List.of(twin.address())).setToken(token).build()) {
      for (PsClient c : List.of(worker, control)) {
        c.create(spec);
        c.initializeAll();
      }
      for (int step = 0; step < 30; step++) {
        // Gradients that vary by element and step, so the moments differ from a first step's.
        INDArray g = Nd4j.linspace(DataType.FLOAT, -1, 0.01, 300).reshape(75, 4).mul(Math.sin(step) + 0.5);
        worker.push(Map.of("w", g));
        control.push(Map.of("w", g));
      }
      worker.pullInto(Map.of("w", copy));
      assertEquals(2 * 300 * 4, worker.copyOptimizerState(), "bytes of Adam's two arrays");
      old.close();
      now.set(server(0).address());
      INDArray refilled = Nd4j.create(DataType.FLOAT, 75, 4);
      worker.pullInto(Map.of("w", refilled)); // moves to the replacement and refills it
      assertEquals(copy, refilled);
      INDArray g = Nd4j.linspace(DataType.FLOAT, 1, -0.01, 300).reshape(75, 4);
      worker.push(Map.of("w", g));
      control.push(Map.of("w", g));
      INDArray after = worker.read("w").value();
      INDArray expected = control.read("w").value();
      for (int i = 0; i < 300; i++) {
        assertEquals(expected.getDouble(i), after.getDouble(i), 1e-6, "element " + i);
      }
    }
    assertEquals(1, hook.restored.size(), hook.restored.toString());
    assertTrue(hook.restored.get(0).contains("; optimizer state of step 30"), hook.restored.toString());
  }

  /** Waits until the reader asked, then until 'w' exists on the replacement at {@code address} or 3 s passed. */
  private void awaitCreatedOrTimeout(CountDownLatch readerAsked, String address) {
    try {
      readerAsked.await(30, TimeUnit.SECONDS);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
      try (PsClient look = PsClient.builder().setShards(List.of(address)).setToken(token).build()) {
        while (System.nanoTime() < deadline && look.listVariables().isEmpty()) {
          Thread.sleep(10);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
