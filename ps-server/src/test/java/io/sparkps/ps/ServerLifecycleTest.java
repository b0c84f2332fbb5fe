package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.factory.Nd4j;

/** Waits end with their calls, servers stop on request, and bad settings are named. */
class ServerLifecycleTest {
  @Test
  void waitingPull_endsWhenItsClientCloses() throws Exception {
    try (TestCluster cluster = TestCluster.netty(1)) {
      PsClient waiter = PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
          .optWaitTimeout(Duration.ofMinutes(5)).build();
      waiter.createGroup(ConsistencyGroup.sync("g", 2));
      waiter.create(VariableSpec.builder().setName("v").setShape(4).optGroup("g").build());
      waiter.initializeAll();
      waiter.pull("v");
      waiter.push(Map.of("v", Nd4j.ones(DataType.FLOAT, 4)));
      CompletableFuture<?> blocked = CompletableFuture.runAsync(() -> waiter.pull("v"));
      ParameterServer ps = cluster.servers.get(0);
      awaitCondition(() -> ps.pendingWaits() == 1, "the SYNC read registered its wait");
      waiter.close();
      awaitCondition(() -> ps.pendingWaits() == 0, "the wait ended with its call");
      assertThrows(java.util.concurrent.ExecutionException.class,
          () -> blocked.get(20, java.util.concurrent.TimeUnit.SECONDS), "the caller was released with an error");
    }
  }

  @Test
  void waitingBulkPull_endsWhenItsClientCloses_andLeavesNoClientThread() throws Exception {
    try (TestCluster cluster = TestCluster.netty(1)) {
      PsClient waiter = PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
          .optWaitTimeout(Duration.ofMinutes(5)).build();
      waiter.createGroup(ConsistencyGroup.sync("g", 2));
      // 1.6 MB: read through the bulk path, whose SYNC wait runs on the client's own threads
      waiter.create(VariableSpec.builder().setName("big").setShape(400, 1000).optGroup("g").build());
      waiter.initializeAll();
      waiter.pull("big");
      waiter.push(Map.of("big", Nd4j.ones(DataType.FLOAT, 400, 1000)));
      CompletableFuture<?> blocked = CompletableFuture.runAsync(() -> waiter.pull("big"));
      ParameterServer ps = cluster.servers.get(0);
      awaitCondition(() -> ps.pendingWaits() == 1, "the SYNC read registered its wait");
      waiter.close();
      assertThrows(java.util.concurrent.ExecutionException.class,
          () -> blocked.get(20, java.util.concurrent.TimeUnit.SECONDS), "the caller was released with an error");
      awaitCondition(() -> Thread.getAllStackTraces().keySet().stream()
          .noneMatch(t -> t.isAlive() && t.getName().startsWith("sparkps-client")), "no sparkps-client thread is left");
    }
  }

  @Test
  void shutdownServers_stopsEveryShard() throws Exception {
    TestCluster cluster = TestCluster.netty(2);
    java.util.List<String> addresses = cluster.servers.stream().map(ParameterServer::address).toList();
    try (PsClient c = cluster.client(0)) {
      c.shutdownServers();
    }
    for (ParameterServer ps : cluster.servers) {
      assertTrue(ps.awaitTermination(Duration.ofSeconds(20)), "ps " + ps.shardIndex() + " stopped");
      // (a ps task may still report where it served: it races the shutdown)
      assertEquals(addresses.get(ps.shardIndex()), ps.address(), "a stopped server still names its address");
    }
    cluster.close();
  }

  @Test
  void badSettings_areNamed() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ParameterServer.builder().setToken(PsToken.generate()).build())
        .getMessage().contains("shardIndex"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> ParameterServer.builder().setShardIndex(0).build())
        .getMessage().contains("token"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> PsClient.builder().setToken(PsToken.generate()).build())
        .getMessage().contains("shards"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> VariableSpec.of("w", 3, 0))
        .getMessage().contains("'w'"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new ConsistencyGroup("g", Consistency.SYNC, 0, 0))
        .getMessage().contains("numWorkers must be >= 1"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> OptimizerConfig.sgd(0.1).withL2(-1))
        .getMessage().contains("l2"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> VariableSpec.builder().setName("v").setShape(2, 2)
        .optInitializer(Initializer.values(Nd4j.ones(3))).build()).getMessage().contains("[3]"));
  }

  @Test
  void token_neverShowsItsValue() {
    PsToken token = PsToken.of("s3cret-value");
    assertFalse(token.toString().contains("s3cret"));
    assertEquals("s3cret-value", token.secret());
  }

  @Test
  void momentum_matchesItsFormula() {
    try (TestCluster cluster = TestCluster.inProcess(1); PsClient c = cluster.client(0)) {
      c.create(VariableSpec.builder().setName("m").setShape(3).optOptimizer(OptimizerConfig.momentum(0.1, 0.9))
          .optInitializer(Initializer.constant(1)).build());
      c.initializeAll();
      float[] w = {1, 1, 1};
      float[] v = new float[3];
      float[][] grads = {{1, 2, 3}, {-1, 0, 1}, {0.5f, 0.5f, 0.5f}};
      for (float[] g : grads) {
        c.push(Map.of("m", Nd4j.createFromArray(g)));
        for (int i = 0; i < 3; i++) {
          v[i] = 0.9f * v[i] - 0.1f * g[i];
          w[i] += v[i];
        }
      }
      float[] actual = c.pull("m").toFloatVector();
      for (int i = 0; i < 3; i++) {
        assertEquals(w[i], actual[i], 1e-6);
      }
    }
  }

  private static void awaitCondition(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting until " + what);
      }
      Thread.sleep(20);
    }
  }
}
