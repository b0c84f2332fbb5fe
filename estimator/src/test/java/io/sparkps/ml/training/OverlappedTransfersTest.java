package io.sparkps.ml.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.StepParts;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Two SYNC workers over a real ps: the first overlaps its transfers with its passes, the second
 * sends its parts by hand, holding one, so that each wait is seen to wait for what it must and no more.
 */
class OverlappedTransfersTest {
  private final PsToken token = PsToken.generate();
  private ParameterServer server;
  private PsClient first;
  private PsClient second;
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private final Map<String, INDArray> params = new LinkedHashMap<>();
  private final Map<String, INDArray> gradients = new LinkedHashMap<>();

  @BeforeEach
  void start() {
    server = ParameterServer.builder().setShardIndex(0).setToken(token).optInProcess("ps-" + UUID.randomUUID()).build()
        .start();
    first = client(0);
    second = client(1);
    first.initializeAll();
    for (String name : List.of("0_W", "1_W")) {
      params.put(name, Nd4j.zeros(DataType.FLOAT, 4));
      gradients.put(name, Nd4j.zeros(DataType.FLOAT, 4));
    }
  }

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    first.close();
    second.close();
    server.close();
  }

  private PsClient client(int worker) {
    PsClient c = PsClient.builder().setShards(List.of(server.address())).setToken(token).optWorker(worker)
        .optWaitTimeout(Duration.ofSeconds(30)).build();
    c.createGroup(ConsistencyGroup.sync("net", 2));
    for (String name : List.of("0_W", "1_W")) {
      c.create(VariableSpec.builder().setName(name).setShape(4).optGroup("net").optOptimizer(OptimizerConfig.sgd(1))
          .optInitializer(Initializer.constant(10)).build());
    }
    return c;
  }

  private OverlappedTransfers transfers(NetworkVariables variables) {
    return new OverlappedTransfers(first, List.of(new OverlappedTransfers.Unit(0, List.of("0_W")),
        new OverlappedTransfers.Unit(1, List.of("1_W"))), params, variables, false, "worker 0");
  }

  private static Map<String, INDArray> filled(String name, float value) {
    return Map.of(name, Nd4j.valueArrayOf(new long[] {4}, value, DataType.FLOAT));
  }

  /** The first worker's step 0, as a network of two layers runs it: forward 0, forward 1, backward 1, backward 0. */
  private void firstWorkersStep0(OverlappedTransfers t) {
    t.begin(0, 8, () -> gradients);
    t.forward(0);
    t.forwardDone();
    gradients.get("1_W").assign(2);
    t.backward(0); // layer 1's gradient is done: pushed while layer 0's is computed
    gradients.get("0_W").assign(4);
    t.end();
  }

  @Test
  void layerZerosForwardStarts_whileLayerOnesParametersWaitForTheOtherWorker() throws Exception {
    try (OverlappedTransfers t = transfers(null)) {
      firstWorkersStep0(t);
      assertEquals(1, first.step(), "the step ended on the shards");
      StepParts other = GrpcPsClient.of(second).stepParts();
      other.push(filled("0_W", 8)); // the second worker's layer 0, and its layer 1 held
      t.begin(1, 8, () -> gradients);
      java.util.concurrent.CountDownLatch layerZero = new java.util.concurrent.CountDownLatch(1);
      Future<?> forward = pool.submit(() -> {
        t.forward(0);
        layerZero.countDown();
        t.forward(1);
        return null;
      });
      assertTrue(layerZero.await(20, TimeUnit.SECONDS), "layer 0's forward pass starts, the other's layer 1 held");
      assertEquals(10 - (4 + 8) / 2f, params.get("0_W").getFloat(0), 1e-6, "layer 0 after both workers' step 0");
      Thread.sleep(500);
      assertFalse(forward.isDone(), "layer 1's forward pass waits for the second worker's layer-1 gradient");
      other.push(filled("1_W", 6));
      other.end();
      forward.get(20, TimeUnit.SECONDS);
      assertEquals(10 - (2 + 6) / 2f, params.get("1_W").getFloat(0), 1e-6, "layer 1 after both workers' step 0");
      assertTrue(t.pullWaitNanos() >= 400_000_000L, "the wait is counted as the step's pull: " + t.pullWaitNanos());
    }
  }

  @Test
  void aFailedPush_failsTheStepWithItsCause_andTheNextStepToo() {
    try (OverlappedTransfers t = transfers(null)) {
      t.begin(0, 8, () -> gradients);
      t.forwardDone();
      gradients.get("1_W").putScalar(2, Float.NaN);
      t.backward(0);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, t::end);
      assertTrue(e.getMessage().contains("'1_W' on ps 0 has NaN at element 2"), e.getMessage());
      assertEquals(0, first.step(), "the step did not end");
      IllegalArgumentException again = assertThrows(IllegalArgumentException.class,
          () -> t.begin(1, 8, () -> gradients));
      assertSame(e, again, "no transfer is made after a failed one");
    }
  }

  @Test
  void auto_overlapsWhenAPsServesOnAnotherHost_only() {
    assertFalse(DenseInputs.overlaps("auto", "10.0.0.5", List.of("10.0.0.5:4100", "10.0.0.5:4101")));
    assertTrue(DenseInputs.overlaps("auto", "10.0.0.5", List.of("10.0.0.5:4100", "10.0.0.6:4100")));
    assertFalse(DenseInputs.overlaps("auto", "driver (recreated)", List.of("inprocess:run-0")), "in-process ps");
    assertTrue(DenseInputs.overlaps("true", "10.0.0.5", List.of("10.0.0.5:4100")));
    assertFalse(DenseInputs.overlaps("false", "10.0.0.5", List.of("10.0.0.6:4100")));
  }
}
