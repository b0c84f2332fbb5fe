package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsAuthenticationException;
import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

class PsClientTest {
  private TestCluster cluster;
  private PsClient client;

  @BeforeEach
  void start() {
    cluster = TestCluster.inProcess(2);
    client = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSplitBytes(64));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static VariableSpec spec(String name, Initializer init, long... shape) {
    return VariableSpec.builder().setName(name).setShape(shape).optInitializer(init).build();
  }

  @Test
  void createInitializePull_constantAndSplitVariable_returnsValues() {
    client.create(List.of(spec("w", Initializer.constant(1.5), 10, 4), spec("b", Initializer.zeros(), 4)));
    assertEquals(Set.of("w", "b"), client.initializeAll());
    assertEquals(2, client.placement().slicesOf("w").size(), "40 floats >= 64 bytes: split over both shards");
    INDArray w = client.pull("w");
    assertArrayEquals(new long[] {10, 4}, w.shape());
    assertEquals(60.0, w.sumNumber().doubleValue(), 1e-6);
    assertEquals(0.0, client.pull("b").sumNumber().doubleValue(), 0);
  }

  @Test
  void initialize_secondCaller_doesNothingAndReportsNone() {
    client.create(spec("w", Initializer.constant(2), 3));
    try (PsClient other = cluster.client(1)) {
      other.create(spec("w", Initializer.constant(2), 3));
      assertEquals(Set.of("w"), client.initialize(List.of("w")));
      client.assignAdd("w", 1.0);
      assertEquals(Set.of(), other.initialize(List.of("w")));
      assertArrayEquals(new float[] {3, 3, 3}, other.pull("w").toFloatVector());
    }
  }

  @Test
  void randomInitializer_sameValuesWhateverTheShardCount() {
    VariableSpec v = spec("r", Initializer.normal(0, 1, 42), 50, 3);
    client.create(v);
    client.initializeAll();
    try (TestCluster one = TestCluster.inProcess(1); PsClient single = one.client(0)) {
      single.create(v);
      single.initializeAll();
      INDArray a = client.pull("r");
      assertEquals(a, single.pull("r"));
      assertEquals(0.0, a.meanNumber().doubleValue(), 0.2);
      assertEquals(1.0, a.stdNumber().doubleValue(), 0.2);
    }
  }

  @Test
  void valuesInitializer_roundTripsExactly() {
    INDArray values = Nd4j.rand(org.nd4j.linalg.api.buffer.DataType.FLOAT, 7, 5);
    client.create(spec("v", Initializer.values(values), 7, 5));
    client.initializeAll();
    assertEquals(values, client.pull("v"));
    // Another task declaring the variable with other initial values (a network of its own,
    // randomly initialized) is no conflict: the first creator's values stay.
    client.create(spec("v", Initializer.values(Nd4j.rand(org.nd4j.linalg.api.buffer.DataType.FLOAT, 7, 5)), 7, 5));
    assertEquals(values, client.pull("v"));
    assertEquals(values.get(org.nd4j.linalg.indexing.NDArrayIndex.interval(2, 6),
        org.nd4j.linalg.indexing.NDArrayIndex.all()), client.pull("v", 2, 6));
  }

  @Test
  void pushRowsAndPullRows_updateOnlyThoseRows() {
    VariableSpec emb = VariableSpec.builder().setName("emb").setShape(6, 2)
        .optInitializer(Initializer.constant(1)).optOptimizer(OptimizerConfig.sgd(0.5)).build();
    client.create(emb);
    client.initializeAll();
    client.pushRows("emb", new long[] {4, 1, 4}, Nd4j.createFromArray(new float[][] {{1, 1}, {2, 2}, {1, 3}}));
    INDArray rows = client.pullRows("emb", new long[] {4, 0, 1});
    assertArrayEquals(new float[] {0, -1, 1, 1, 0, 0}, rows.reshape(6).toFloatVector());
  }

  @Test
  void assignAssignAddRead_advanceVersion() {
    client.create(spec("x", Initializer.zeros(), 2));
    client.initializeAll();
    client.assign("x", Nd4j.createFromArray(1f, 2f));
    client.assignAdd(Map.of("x", Nd4j.createFromArray(0.5f, 0.5f)));
    VariableValue value = client.read("x");
    assertArrayEquals(new float[] {1.5f, 2.5f}, value.value().toFloatVector());
    assertEquals(2, value.version());
  }

  @Test
  void listVariablesAndReportUninitialized_describeState() {
    client.create(List.of(spec("a", Initializer.zeros(), 100), spec("c", Initializer.zeros(), 1)));
    client.initialize(List.of("a"));
    assertEquals(List.of("c"), client.reportUninitialized());
    List<VariableInfo> infos = client.listVariables();
    assertEquals(3, infos.size(), "a is split in two, c is whole");
    assertTrue(infos.stream().filter(i -> i.name().equals("a")).allMatch(VariableInfo::initialized));
  }

  @Test
  void awaitInitialized_timesOutNamingTheVariables() {
    client.create(spec("late", Initializer.zeros(), 3));
    PsTimeoutException e = assertThrows(PsTimeoutException.class,
        () -> client.awaitInitialized(List.of("late"), Duration.ofMillis(200)));
    assertTrue(e.getMessage().contains("late") && e.getMessage().contains("chief"), e.getMessage());
  }

  @Test
  void awaitInitialized_returnsWhenTheChiefInitializes() throws Exception {
    client.create(spec("w", Initializer.constant(1), 3));
    try (PsClient worker = cluster.client(1)) {
      worker.create(spec("w", Initializer.constant(1), 3));
      Thread chief = new Thread(() -> {
        sleep(200);
        client.initializeAll();
      });
      chief.start();
      long t0 = System.nanoTime();
      worker.awaitInitialized(List.of("w"), Duration.ofSeconds(20));
      assertTrue(System.nanoTime() - t0 >= 150_000_000L, "returned before the chief initialized");
      chief.join();
    }
  }

  @Test
  void badInput_eachFailsClearlyAndLeavesStateUnchanged() {
    client.create(spec("w", Initializer.constant(1), 2, 2));
    IllegalStateException uninit = assertThrows(IllegalStateException.class,
        () -> client.push(Map.of("w", Nd4j.ones(2, 2))));
    assertTrue(uninit.getMessage().contains("not initialized"), uninit.getMessage());
    client.initializeAll();
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class, () -> client.pull("nope"));
    assertTrue(unknown.getMessage().contains("'nope'"), unknown.getMessage());
    IllegalArgumentException shape = assertThrows(IllegalArgumentException.class,
        () -> client.push(Map.of("w", Nd4j.ones(4))));
    assertTrue(shape.getMessage().contains("[4]") && shape.getMessage().contains("[2, 2]"), shape.getMessage());
    IllegalArgumentException nan = assertThrows(IllegalArgumentException.class,
        () -> client.push(Map.of("w", Nd4j.createFromArray(new float[][] {{0, 0}, {Float.NaN, 0}}))));
    assertTrue(nan.getMessage().contains("'w'") && nan.getMessage().contains("NaN"), nan.getMessage());
    IllegalArgumentException conflict = assertThrows(IllegalArgumentException.class, () -> {
      try (PsClient other = cluster.client(1)) {
        other.create(spec("w", Initializer.constant(1), 4, 1));
      }
    });
    assertTrue(conflict.getMessage().contains("different spec"), conflict.getMessage());
    assertEquals(0, client.read("w").version());
    assertEquals(4.0, client.pull("w").sumNumber().doubleValue(), 0);
  }

  @Test
  void wrongToken_failsWithAuthenticationError() {
    client.create(spec("w", Initializer.zeros(), 1));
    try (PsClient intruder = PsClient.builder().setShards(cluster.addresses()).setToken(PsToken.of("guess")).build()) {
      PsAuthenticationException e = assertThrows(PsAuthenticationException.class, intruder::listVariables);
      assertTrue(e.getMessage().contains("wrong SparkPS token"), e.getMessage());
      assertTrue(!e.getMessage().contains(cluster.token.secret()));
    }
  }

  @Test
  void closedClient_throwsIllegalStateAndClosesTwiceQuietly() {
    client.close();
    client.close();
    assertThrows(IllegalStateException.class, () -> client.pull("w"));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
