package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.spec.VariableSpec;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The real transport: Netty on loopback, tensors far above gRPC's 4 MiB message limit; bulk data
 * over the shards' sockets, and through memory where client and shard share the JVM.
 */
class NettyTransportTest {
  @ParameterizedTest(name = "bulk transfers: {0}")
  @ValueSource(strings = {"tcp", "same-jvm", "tls"})
  void assignAndPull_24MiBVariableOverTwoShards_roundTripsExactly(String transport) {
    try (TestCluster cluster = TestCluster.netty(2, transport); PsClient c = cluster.client(0)) {
      assertEquals(transport, GrpcPsClient.of(c).bulkTransport(1));
      c.create(VariableSpec.of("big", 3000, 2048));
      c.initializeAll();
      INDArray values = Nd4j.rand(DataType.FLOAT, 3000, 2048);
      c.assign("big", values);
      assertEquals(values, c.pull("big"));
      assertEquals(values.get(org.nd4j.linalg.indexing.NDArrayIndex.interval(1400, 1600),
          org.nd4j.linalg.indexing.NDArrayIndex.all()), c.pull("big", 1400, 1600), "a row range across both shards");
      c.push(Map.of("big", Nd4j.ones(DataType.FLOAT, 3000, 2048)));
      assertEquals(values.sub(0.01), c.pull("big"));
      assertEquals(2, c.listVariables().size());
      c.create(VariableSpec.of("small", 4, 4)); // below the bulk size: gRPC, or memory in the same JVM
      c.initializeAll();
      INDArray small = Nd4j.rand(DataType.FLOAT, 4, 4);
      c.assign("small", small);
      c.push(Map.of("small", Nd4j.ones(DataType.FLOAT, 4, 4)));
      assertEquals(small.sub(0.01), c.pull("small"));
    }
  }

  @ParameterizedTest(name = "same JVM transfers: {0}")
  @ValueSource(booleans = {false, true})
  void bulkPush_withNaN_isRejectedByTheShardAndNothingChanges(boolean sameJvm) {
    try (TestCluster cluster = TestCluster.netty(1, sameJvm); PsClient c = cluster.client(0)) {
      c.create(VariableSpec.builder().setName("w").setShape(1024, 1024).optInitializer(Initializer.constant(1)).build());
      c.initializeAll();
      INDArray g = Nd4j.ones(DataType.FLOAT, 1024, 1024);
      g.putScalar(1023, 1000, Float.POSITIVE_INFINITY);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.push(Map.of("w", g)));
      assertTrue(e.getMessage().contains("'w' on ps 0") && e.getMessage().contains("Infinity")
          && e.getMessage().contains("element " + (1023 * 1024 + 1000)), e.getMessage());
      assertEquals(1024.0 * 1024, c.pull("w").sumNumber().doubleValue(), 0);
      assertEquals(0, c.read("w").version());
      g.putScalar(1023, 1000, 1f);
      c.push(Map.of("w", g));
      assertEquals(1, c.read("w").version(), "the connection is still usable after a refused update");
    }
  }

  @ParameterizedTest(name = "same JVM transfers: {0}")
  @ValueSource(booleans = {false, true})
  void syncOverBulk_pullsWaitForTheOtherWorker(boolean sameJvm) throws Exception {
    try (TestCluster cluster = TestCluster.netty(2, sameJvm); PsClient w0 = cluster.client(0);
        PsClient w1 = cluster.client(1)) {
      VariableSpec spec = VariableSpec.builder().setName("big").setShape(2048, 1024).optGroup("sync")
          .optOptimizer(OptimizerConfig.sgd(1)).build();
      for (PsClient c : List.of(w0, w1)) {
        c.createGroup(ConsistencyGroup.sync("sync", 2));
        c.create(spec);
      }
      w0.initializeAll();
      INDArray ones = Nd4j.ones(DataType.FLOAT, 2048, 1024);
      w0.pull("big");
      w0.push(Map.of("big", ones));
      java.util.concurrent.CompletableFuture<INDArray> next = java.util.concurrent.CompletableFuture.supplyAsync(() -> w0.pull("big"));
      Thread.sleep(300);
      assertTrue(!next.isDone(), "worker 0's read of step 1 waits for worker 1's gradient");
      w1.pull("big");
      w1.push(Map.of("big", ones.mul(3)));
      INDArray step1 = next.get(30, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals(-2.0, step1.getDouble(2047, 1023), 0, "one SGD step with the average of 1 and 3");
      assertEquals(-2.0 * 2048 * 1024, step1.sumNumber().doubleValue(), 1);
    }
  }

  @Test
  void sameJvmTransfers_toAStoppedShard_failNamingIt() {
    try (TestCluster cluster = TestCluster.netty(1, true); PsClient c = cluster.client(0)) {
      c.create(VariableSpec.of("w", 1024, 1024));
      c.initializeAll();
      INDArray g = Nd4j.ones(DataType.FLOAT, 1024, 1024);
      c.push(Map.of("w", g));
      assertEquals("same-jvm", GrpcPsClient.of(c).bulkTransport(0));
      cluster.servers.get(0).close();
      RuntimeException e = assertThrows(RuntimeException.class, () -> c.push(Map.of("w", g)));
      assertTrue(e.getMessage().contains("ps 0"), e.getMessage());
    }
  }

  @Test
  void sparseRows_overTheNetwork() {
    try (TestCluster cluster = TestCluster.netty(2); PsClient c = cluster.client(0)) {
      c.create(VariableSpec.builder().setName("emb").setShape(1 << 16, 64).optInitializer(Initializer.uniform(-1, 1, 9))
          .optOptimizer(OptimizerConfig.adaGrad(0.1)).build());
      c.initializeAll();
      long[] rows = {5, 40000, 65535, 5};
      INDArray before = c.pullRows("emb", rows);
      c.pushRows("emb", new long[] {40000}, Nd4j.ones(DataType.FLOAT, 1, 64));
      INDArray after = c.pullRows("emb", rows);
      assertEquals(before.getRow(0), after.getRow(0));
      assertEquals(before.getRow(0), after.getRow(3));
      assertTrue(after.getRow(1).sub(before.getRow(1)).maxNumber().doubleValue() < -0.05, "row 40000 moved");
      assertEquals(before.getRow(2), after.getRow(2));
    }
  }

  @Test
  void unreachableServer_failsFastNamingTheAddress() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    try (PsClient c = PsClient.builder().setShards(List.of("127.0.0.1:" + port)).setToken(PsToken.generate())
        .optCallTimeout(Duration.ofSeconds(5)).build()) {
      PsUnavailableException e = assertThrows(PsUnavailableException.class, c::listVariables);
      assertTrue(e.getMessage().contains("127.0.0.1:" + port) && e.getMessage().contains("unreachable"), e.getMessage());
    }
  }

  @Test
  void close_leavesNoThreadsBehind() throws Exception {
    roundTrip(); // once first: the JVM-wide threads started at first use (ND4J's deallocator, ...) are there before
    Thread.sleep(1500); // gRPC's shared pools go 1 s after their last user
    java.util.Map<Long, io.sparkps.ps.testing.ThreadDump.Info> before = io.sparkps.ps.testing.ThreadDump.ofThisJvm();
    roundTrip();
    assertEquals(List.of(), io.sparkps.ps.testing.ThreadDump.awaitLeftSince(before, Duration.ofSeconds(5)),
        "threads of any name (gRPC's, Netty's, SparkPS's) started by the cluster and its client");
  }

  private static void roundTrip() {
    try (TestCluster cluster = TestCluster.netty(2); PsClient c = cluster.client(0)) {
      c.create(VariableSpec.of("x", 10));
      c.initializeAll();
      c.pull("x");
    }
  }

  @Test
  void bindBusyPort_failsNamingThePort() throws Exception {
    try (ServerSocket busy = new ServerSocket(0)) {
      ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(PsToken.generate())
          .optPort(busy.getLocalPort()).build();
      Exception e = assertThrows(java.io.UncheckedIOException.class, ps::start);
      assertTrue(e.getMessage().contains(":" + busy.getLocalPort()), e.getMessage());
    }
  }
}
