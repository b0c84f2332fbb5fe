package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A SYNC read of dense variables over the bulk port (or through memory in the ps's JVM) waits on
 * the ps within its one request, as a table's rows do: no gRPC call to wait first. Each case holds
 * the read (the ps counts it waiting), then releases it.
 */
class SyncReadOverBulkTest {
  private TestCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private PsClient[] twoWorkers(String transport) {
    cluster = TestCluster.netty(1, transport);
    PsClient[] workers = new PsClient[2];
    for (int w = 0; w < 2; w++) {
      workers[w] = cluster.client(cluster.builder().optWorker(w).optWaitTimeout(Duration.ofSeconds(30)));
      workers[w].createGroup(ConsistencyGroup.sync("g", 2));
      workers[w].create(VariableSpec.builder().setName("w").setShape(4).optGroup("g")
          .optOptimizer(OptimizerConfig.sgd(1.0)).optInitializer(Initializer.values(Nd4j.createFromArray(1f, 2, 3, 4)))
          .build());
    }
    workers[0].initializeAll();
    workers[1].awaitInitialized(List.of("w"), Duration.ofSeconds(20));
    return workers;
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "same-jvm"})
  void aSyncRead_waitsOnThePsInItsOneRequest_untilTheLastWorkerPushes(String transport) throws Exception {
    PsClient[] w = twoWorkers(transport);
    ParameterServer ps = cluster.servers.get(0);
    for (PsClient c : w) {
      assertArrayEquals(new float[] {1, 2, 3, 4}, c.pull("w").toFloatVector(), "step 0");
    }
    w[0].push(Map.of("w", Nd4j.createFromArray(2f, 2, 2, 2)));
    CompletableFuture<INDArray> held = CompletableFuture.supplyAsync(() -> w[0].pull("w"));
    awaitWaiting(ps, 1);
    Thread.sleep(300);
    assertFalse(held.isDone(), "worker 0's read of step 1 waits for worker 1's push of step 0");
    w[1].push(Map.of("w", Nd4j.createFromArray(0f, 0, 0, 4)));
    float[] step1 = held.get(20, TimeUnit.SECONDS).toFloatVector();
    assertArrayEquals(new float[] {0, 1, 2, 1}, step1, 1e-6f, "the mean of both gradients, applied once");
    assertEquals(0, ps.pendingWaits());
    assertFalse(ps.callsServed().containsKey("Pull"), "every read took the bulk path: " + ps.callsServed());
  }

  @ParameterizedTest
  @ValueSource(strings = {"tcp", "same-jvm"})
  void aHeldSyncRead_endsAtOnce_whenItsPsStops(String transport) throws Exception {
    PsClient[] w = twoWorkers(transport);
    ParameterServer ps = cluster.servers.get(0);
    w[0].pull("w");
    w[0].push(Map.of("w", Nd4j.createFromArray(2f, 2, 2, 2)));
    CompletableFuture<INDArray> held = CompletableFuture.supplyAsync(() -> w[0].pull("w"));
    awaitWaiting(ps, 1);
    long stopped = System.nanoTime();
    ps.close();
    ExecutionException e = assertThrows(ExecutionException.class, () -> held.get(20, TimeUnit.SECONDS));
    long ms = (System.nanoTime() - stopped) / 1_000_000;
    assertTrue(e.getCause() instanceof PsException, "a PsException: " + e.getCause());
    assertTrue(ms < 8_000, "the read ended " + ms + " ms after its ps stopped, not at its 30 s wait");
  }

  private static void awaitWaiting(ParameterServer ps, int reads) throws InterruptedException {
    long until = System.nanoTime() + 10_000_000_000L;
    while (ps.pendingWaits() < reads && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(reads, ps.pendingWaits(), "the ps holds the read, waiting for worker 1");
  }
}
