package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.nd4j.linalg.learning.config.Adam;

/** SYNC, SSP and ASYNC with concurrent workers, each with its own client. */
class ConsistencyTest {
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
    return cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optWorker(index).optSplitBytes(64).optWaitTimeout(Duration.ofSeconds(30)));
  }

  private static INDArray gradient(int worker, int step) {
    java.util.Random random = new java.util.Random(1000L * step + worker);
    float[] values = new float[30];
    for (int i = 0; i < values.length; i++) {
      values[i] = random.nextFloat() - 0.5f;
    }
    return Nd4j.createFromArray(values).reshape(6, 5);
  }

  private <T> List<T> runAll(List<Callable<T>> tasks) throws Exception {
    List<Future<T>> futures = new ArrayList<>();
    tasks.forEach(t -> futures.add(pool.submit(t)));
    List<T> results = new ArrayList<>();
    for (Future<T> f : futures) {
      results.add(f.get(60, TimeUnit.SECONDS));
    }
    return results;
  }

  /** Worker {@code worker}'s gradient at weights {@code w} in step {@code step}: it depends on what the pull read. */
  private static INDArray gradientAt(INDArray w, int worker, int step) {
    return w.mul(0.3 * (worker + 1)).addi(gradient(worker, step));
  }

  @Test
  void sync_kStepsOfNWorkers_eachPullReadsItsStep_andTheResultEqualsSequentialAveragedGradients() throws Exception {
    int workers = 3;
    int steps = 8;
    INDArray w0 = Nd4j.rand(DataType.FLOAT, 6, 5);
    VariableSpec spec = VariableSpec.builder().setName("w").setShape(6, 5).optGroup("dense")
        .optOptimizer(OptimizerConfig.adam(0.05)).optInitializer(Initializer.values(w0)).build();
    List<Callable<List<INDArray>>> tasks = new ArrayList<>();
    for (int i = 0; i < workers; i++) {
      int index = i;
      tasks.add(() -> {
        PsClient c = worker(index);
        c.createGroup(ConsistencyGroup.sync("dense", workers));
        c.create(spec);
        if (index == 0) {
          c.initializeAll();
        }
        c.awaitInitialized(List.of("w"), Duration.ofSeconds(20));
        List<INDArray> pulled = new ArrayList<>();
        for (int t = 0; t < steps; t++) {
          INDArray w = c.pull("w");
          pulled.add(w);
          if (index == 2) {
            Thread.sleep(5); // the others push first and must wait for it before their next pull
          }
          c.push(Map.of("w", gradientAt(w, index, t)));
        }
        return pulled;
      });
    }
    List<List<INDArray>> pulls = runAll(tasks);

    INDArray expected = w0.dup();
    GradientUpdater<?> adam = new Adam(0.05).instantiate(Nd4j.zeros(DataType.FLOAT, 1, 60), true);
    for (int t = 0; t < steps; t++) {
      for (int i = 0; i < workers; i++) {
        double diff = pulls.get(i).get(t).sub(expected).amaxNumber().doubleValue();
        assertTrue(diff < 1e-5, "worker " + i + " read step " + t + " off by " + diff);
      }
      INDArray avg = Nd4j.zeros(DataType.FLOAT, 6, 5);
      for (int i = 0; i < workers; i++) {
        avg.addi(gradientAt(expected, i, t));
      }
      avg.divi(workers);
      adam.applyUpdater(avg, t, 0);
      expected.subi(avg);
    }
    try (PsClient reader = worker(0)) {
      VariableValue v = reader.read("w");
      assertEquals(steps, v.version(), "one version per SYNC step");
      double diff = v.value().sub(expected).amaxNumber().doubleValue();
      assertTrue(diff < 1e-5, "max |sync - sequential| = " + diff);
    }
  }

  @Test
  void ssp_fastestWorkerNeverReadsMoreThanStalenessAhead() throws Exception {
    int staleness = 2;
    int steps = 12;
    AtomicInteger maxGap = new AtomicInteger();
    List<Callable<Void>> tasks = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      int index = i;
      tasks.add(() -> {
        PsClient c = worker(index);
        c.createGroup(ConsistencyGroup.ssp("ssp", 2, staleness));
        for (String name : List.of("s0", "s1")) {
          c.create(VariableSpec.builder().setName(name).setShape(1).optGroup("ssp").optPinnedShard(0)
              .optOptimizer(OptimizerConfig.sgd(1)).build());
        }
        c.initializeAll();
        for (int t = 0; t < steps; t++) {
          INDArray other = Nd4j.zeros(DataType.FLOAT, 1);
          c.pullInto(Map.of("s" + (1 - index), other));
          // Each worker adds 1 per step to its own variable: what the read sees of the other's
          // variable is how many of its steps were applied.
          maxGap.accumulateAndGet(t - (int) other.getFloat(0), Math::max);
          if (index == 1) {
            Thread.sleep(40);
          }
          c.push(Map.of("s" + index, Nd4j.createFromArray(-1f)));
        }
        return null;
      });
    }
    runAll(tasks);
    assertTrue(maxGap.get() <= staleness, "a worker read " + maxGap.get() + " clocks ahead of the slowest");
    assertEquals(staleness, maxGap.get(), "the fast worker did run ahead, up to the staleness bound");
  }

  @Test
  void async_concurrentGradientPushesOfFourWorkers_toASplitVariable_areAllApplied() throws Exception {
    INDArray w0 = Nd4j.rand(DataType.FLOAT, 6, 5).muli(100).castTo(DataType.INT32).castTo(DataType.FLOAT);
    try (PsClient setup = worker(0)) {
      setup.create(VariableSpec.builder().setName("w").setShape(6, 5).optOptimizer(OptimizerConfig.sgd(1))
          .optInitializer(Initializer.values(w0)).build());
      setup.initializeAll();
      assertEquals(2, setup.placement().slicesOf("w").size(), "split over both shards");
    }
    List<Callable<Void>> tasks = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      int index = i;
      tasks.add(() -> {
        PsClient c = worker(index);
        for (int k = 0; k < 50; k++) {
          c.push(Map.of("w", integerGradient(index, k)));
        }
        return null;
      });
    }
    runAll(tasks);
    INDArray expected = w0.dup();
    for (int i = 0; i < 4; i++) {
      for (int k = 0; k < 50; k++) {
        expected.subi(integerGradient(i, k)); // SGD, rate 1; small integers add up exactly in any order
      }
    }
    try (PsClient reader = worker(0)) {
      VariableValue v = reader.read("w");
      assertEquals(expected, v.value(), "every one of the 200 gradients applied once");
      assertEquals(200, v.version());
    }
  }

  private static INDArray integerGradient(int worker, int k) {
    float[] g = new float[30];
    for (int e = 0; e < g.length; e++) {
      g[e] = (worker * 7 + k * 3 + e) % 5 - 2;
    }
    return Nd4j.createFromArray(g).reshape(6, 5);
  }

  @Test
  void sync_missingWorker_pullTimesOutNamingIt() {
    PsClient c = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optWorker(0).optWaitTimeout(Duration.ofMillis(300)));
    c.createGroup(ConsistencyGroup.sync("pair", 2));
    c.create(VariableSpec.builder().setName("p").setShape(3).optGroup("pair").build());
    c.initializeAll();
    c.pull("p");
    c.push(Map.of("p", Nd4j.ones(DataType.FLOAT, 3)));
    long t0 = System.nanoTime();
    PsTimeoutException e = assertThrows(PsTimeoutException.class, () -> c.pull("p"));
    assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "the wait was bounded");
    assertTrue(e.getMessage().contains("workers [1]") && e.getMessage().contains("step 1"), e.getMessage());
  }
}
