package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.StepParts;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
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

/** A SYNC step's transfers in parts: each part waits for the other workers' gradients of its own variables only. */
class StepPartsTest {
  private TestCluster cluster;
  private ExecutorService pool;

  @BeforeEach
  void start() {
    cluster = TestCluster.inProcess(2);
    pool = Executors.newCachedThreadPool();
  }

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    cluster.close();
  }

  private PsClient worker(int index) {
    PsClient c = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optWorker(index).optWaitTimeout(Duration.ofSeconds(30)));
    c.createGroup(ConsistencyGroup.sync("g", 2));
    for (String name : List.of("a", "b")) {
      c.create(VariableSpec.builder().setName(name).setShape(4).optGroup("g").optOptimizer(OptimizerConfig.sgd(1))
          .optInitializer(Initializer.constant(10)).optPinnedShard(name.equals("a") ? 0 : 1).build());
    }
    return c;
  }

  private static Map<String, INDArray> filled(String name, float value) {
    return Map.of(name, Nd4j.valueArrayOf(new long[] {4}, value, DataType.FLOAT));
  }

  @Test
  void aPartIsServedOnceEveryWorkerPushedItsVariables_whileAnotherPartStillWaits() throws Exception {
    PsClient w0 = worker(0);
    PsClient w1 = worker(1);
    w0.initializeAll();
    StepParts p0 = GrpcPsClient.of(w0).stepParts();
    StepParts p1 = GrpcPsClient.of(w1).stepParts();
    // Step 0: worker 0 pushes both parts (b first, as a backward pass would) and ends its step.
    p0.push(filled("b", 2));
    p0.push(filled("a", 4));
    p0.end();
    // Worker 1 pushes b, and holds a.
    p1.push(filled("b", 6));
    CountDownLatch bRead = new CountDownLatch(1);
    Map<String, INDArray> a = filled("a", 0);
    Map<String, INDArray> b = filled("b", 0);
    Future<?> reads = pool.submit(() -> {
      p0.pull(b); // both workers' step-0 gradients of b are in
      bRead.countDown();
      p0.pull(a); // waits for worker 1's gradient of a
      return null;
    });
    assertTrue(bRead.await(20, TimeUnit.SECONDS), "worker 0's pull of b at step 1");
    Thread.sleep(300);
    assertFalse(reads.isDone(), "worker 0's pull of a waits for worker 1's part");
    assertEquals(10 - (2 + 6) / 2f, b.get("b").getFloat(0), 1e-6, "b after step 0: the mean of both gradients");
    p1.push(filled("a", 8));
    p1.end();
    reads.get(20, TimeUnit.SECONDS);
    assertEquals(10 - (4 + 8) / 2f, a.get("a").getFloat(0), 1e-6, "a after step 0");
    assertEquals(1, w0.step());
    assertEquals(1, w0.readVersion(), "the lowest version the step's parts read");
    assertEquals(1, w1.step());
  }

  @Test
  void aPushOfAPartAtAStepTheVariableIsNotAt_failsNamingIt() {
    PsClient w0 = worker(0);
    worker(1);
    w0.initializeAll();
    StepParts p0 = GrpcPsClient.of(w0).stepParts();
    p0.end();
    p0.end(); // step 2 while the variables are at 0: SYNC refuses a gradient from the future
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> p0.push(filled("a", 1)));
    assertTrue(e.getMessage().contains("SYNC step 2"), e.getMessage());
  }
}
