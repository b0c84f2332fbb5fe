package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.LastCopy;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.CoordinatorServer;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;
import io.sparkps.spark.recovery.CoordinatorRecovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The executor's keeper of a worker's last copy, against a real coordinator and real ps over
 * sockets: it holds one copy per run (the newer), waits on the coordinator, refills what the chief
 * of the next attempt asks for and lets go of the copy then, or when the run stops.
 */
class KeptCopiesTest {
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new ArrayList<>();
  private final Registry registry = new Registry(2, 2);
  private final CoordinatorServer coordinator = new CoordinatorServer("127.0.0.1", token, null, registry);
  private final String run = "kept-" + System.nanoTime();

  @AfterEach
  void stop() {
    KeptCopies.release(run);
    coordinator.close();
    servers.forEach(ParameterServer::close);
  }

  private ParameterServer server(int shard) {
    ParameterServer ps = ParameterServer.builder().setShardIndex(shard).setToken(token).optHost("127.0.0.1").build()
        .start();
    servers.add(ps);
    register(Registration.newBuilder().setRole(Role.PS).setIndex(shard).setHost("127.0.0.1")
        .setPort(Integer.parseInt(ps.address().substring(ps.address().lastIndexOf(':') + 1))).setAttempt(servers.size())
        .setExecutorId("e" + shard).build());
    return ps;
  }

  /** A task's registration, as it makes it: through the coordinator. */
  private void register(Registration r) {
    try (CoordinatorClient c = new CoordinatorClient(coordinator.address(), token, null, Duration.ofSeconds(5))) {
      c.register(r);
    }
  }

  private TaskEnv env(List<String> addresses) {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(2).setNumWorkers(2).build();
    return new TaskEnv(spec, run, coordinator.address(), token, null, addresses);
  }

  /** Worker 1 of attempt 0 trains {@code steps} steps of w += 1 (SGD at rate 1 of -1) and keeps its last pull. */
  private static INDArray train(PsClient ps, int steps) {
    INDArray held = Nd4j.create(DataType.FLOAT, 8, 4);
    for (int t = 0; t < steps; t++) {
      ps.pullInto(Map.of("w", held));
      ps.push(Map.of("w", Nd4j.valueArrayOf(new long[] {8, 4}, -1f, DataType.FLOAT)));
    }
    ps.pullInto(Map.of("w", held));
    return held;
  }

  private PsClient worker(List<String> addresses, int index, CoordinatorClient client) {
    return env(addresses).psClientBuilder(addresses).optWorker(index).optSplitBytes(64)
        .optRecovery(new CoordinatorRecovery(client, index, Duration.ofSeconds(5), true, 0)).build();
  }

  private static void await(java.util.function.BooleanSupplier done, String what) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (!done.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "not within 20 s: " + what);
      Thread.sleep(20);
    }
  }

  @Test
  void aKeptCopy_refillsWhatTheNextAttemptsChiefAsksFor_thenIsReleased() throws Exception {
    List<String> addresses = List.of(server(0).address(), server(1).address());
    register(Registration.newBuilder().setRole(Role.CHIEF).setIndex(0).setHost("h").setAttempt(0).build());
    INDArray pulled;
    try (CoordinatorClient client = env(addresses).coordinatorClient();
         PsClient ps = worker(addresses, 1, client);
         PsClient older = worker(addresses, 0, client)) {
      ps.createGroup(ConsistencyGroup.async("g"));
      ps.create(VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(0))
          .optOptimizer(OptimizerConfig.sgd(1)).optGroup("g").build());
      ps.initializeAll();
      older.createGroup(ConsistencyGroup.async("g"));
      older.create(VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(0))
          .optOptimizer(OptimizerConfig.sgd(1)).optGroup("g").build());
      train(older, 1);
      pulled = train(ps, 3); // w = 4 everywhere
      KeptCopies.keep(run, 0, ps, env(addresses));
      LastCopy kept = KeptCopies.kept(run);
      assertNotNull(kept);
      KeptCopies.keep(run, 0, older, env(addresses)); // an older copy of the same run and attempt
      assertSame(kept, KeptCopies.kept(run), "one copy per run: the newer stays");
    }
    // Shard 1 dies with its executor; its replacement registers; the next attempt's chief asks.
    servers.get(1).close();
    String replacement = server(1).address();
    register(Registration.newBuilder().setRole(Role.CHIEF).setIndex(0).setHost("h").setAttempt(1).build());
    try (CoordinatorClient chief = new CoordinatorClient(coordinator.address(), token, null, Duration.ofSeconds(5))) {
      chief.requestRefill(1, List.of(1));
    }
    await(() -> KeptCopies.kept(run) == null, "the copy used and released");
    try (PsClient reader = PsClient.builder().setShards(List.of(addresses.get(0), replacement)).setToken(token)
        .optSplitBytes(64).build()) {
      await(() -> reader.listVariables().stream().allMatch(v -> v.initialized()), "the replacement refilled");
      assertArrayEquals(pulled.ravel().toFloatVector(), reader.pull("w").ravel().toFloatVector(), 0f);
    }
    assertEquals(1, registry.losses().size(), registry.losses().toString());
    String source = io.sparkps.spark.recovery.PsRecoveries.of(registry).get(0).source();
    assertTrue(source != null && source.startsWith("worker 1's copy of step 3 [w] kept by executor ")
        && source.endsWith(" since stage attempt 0 ended"), source);
  }

  @Test
  void aKeptCopy_isReleasedWhenTheRunStops() throws Exception {
    List<String> addresses = List.of(server(0).address(), server(1).address());
    try (CoordinatorClient client = env(addresses).coordinatorClient(); PsClient ps = worker(addresses, 1, client)) {
      ps.createGroup(ConsistencyGroup.async("g"));
      ps.create(VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(0))
          .optOptimizer(OptimizerConfig.sgd(1)).optGroup("g").build());
      ps.initializeAll();
      assertNull(GrpcPsClient.of(ps).lastCopy());
      KeptCopies.keep(run, 0, ps, env(addresses));
      assertNull(KeptCopies.kept(run), "nothing pulled: nothing kept");
      train(ps, 1);
      KeptCopies.keep(run, 0, ps, env(addresses));
    }
    assertNotNull(KeptCopies.kept(run));
    Thread.sleep(500);
    assertNotNull(KeptCopies.kept(run), "kept while the run goes on and nobody asks");
    registry.stop();
    await(() -> KeptCopies.kept(run) == null, "released once the run stops");
  }
}
