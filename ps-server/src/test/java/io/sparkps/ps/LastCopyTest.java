package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.LastCopy;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A worker's copy that outlives its client: taken when its task ends ({@link GrpcPsClient#lastCopy()}),
 * handed to a client of the next attempt, which refills the shards whose state was lost, and only
 * those, over real sockets.
 */
class LastCopyTest {
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new CopyOnWriteArrayList<>();

  /** A supervisor that records refills and never has a replacement (a lost shard fails the call). */
  private static final class Reports implements ShardRecovery {
    final List<String> restored = new CopyOnWriteArrayList<>();

    @Override
    public String awaitReplacement(int shard, String lost) {
      throw new PsUnavailableException("ps " + shard + " at " + lost + " is gone and has no replacement", null);
    }

    @Override
    public void restored(int shard, long step, String source) {
      restored.add(shard + "@" + step + ": " + source);
    }
  }

  @AfterEach
  void stop() {
    servers.forEach(ParameterServer::close);
  }

  private ParameterServer server(int shard) {
    ParameterServer ps = ParameterServer.builder().setShardIndex(shard).setToken(token).optHost("127.0.0.1").build()
        .start();
    servers.add(ps);
    return ps;
  }

  private PsClient client(List<String> addresses, int worker, ShardRecovery recovery) {
    PsClient.Builder b = PsClient.builder().setShards(addresses).setToken(token).optWorker(worker).optSplitBytes(64)
        .optCallTimeout(Duration.ofSeconds(10)).optWaitTimeout(Duration.ofSeconds(10));
    return (recovery == null ? b : b.optRecovery(recovery)).build();
  }

  /** w (8x4, split over both shards) and b (8, pinned to shard 1), ASYNC, SGD 0.5 from ones. */
  private static List<VariableSpec> specs() {
    return List.of(
        VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(1))
            .optOptimizer(OptimizerConfig.sgd(0.5)).optGroup("g").build(),
        VariableSpec.builder().setName("b").setShape(8).optInitializer(Initializer.constant(1))
            .optOptimizer(OptimizerConfig.sgd(0.5)).optGroup("g").optPinnedShard(1).build());
  }

  /** Declares the group and variables, as each worker's start does (uninitialized on a replacement). */
  private static PsClient declare(PsClient ps) {
    ps.createGroup(ConsistencyGroup.async("g"));
    ps.create(specs());
    return ps;
  }

  private static Map<String, INDArray> arrays() {
    return Map.of("w", Nd4j.create(DataType.FLOAT, 8, 4), "b", Nd4j.create(DataType.FLOAT, 8));
  }

  private static Map<String, INDArray> gradients(float g) {
    return Map.of("w", Nd4j.valueArrayOf(new long[] {8, 4}, g, DataType.FLOAT),
        "b", Nd4j.valueArrayOf(new long[] {8}, g, DataType.FLOAT));
  }

  @Test
  void aCopyTakenAtTheEndOfATask_refillsOnlyTheLostShard_withItsValuesAndStep() {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    Map<String, INDArray> held = arrays();
    LastCopy copy;
    try (PsClient worker1 = client(List.of(s0.address(), s1.address()), 1, new Reports())) {
      declare(worker1).initializeAll();
      for (int step = 0; step < 3; step++) {
        worker1.pullInto(held);
        worker1.push(gradients(1));
      }
      worker1.pullInto(held); // 1 - 3 * 0.5 everywhere: the copy's values
      copy = GrpcPsClient.of(worker1).lastCopy();
    }
    assertEquals(Set.of(0, 1), copy.shards());
    assertEquals(3, copy.newestStep());
    assertEquals((32 + 8) * 4L, copy.bytes());
    assertTrue(copy.cutOff().isEmpty(), copy.toString());
    // Shard 1 dies and is replaced, empty; shard 0 trains on (another worker pushes once more).
    s1.close();
    ParameterServer replacement = server(1);
    Reports reports = new Reports();
    try (PsClient next = client(List.of(s0.address(), replacement.address()), 0, reports)) {
      declare(next); // as a worker of the next attempt declares them: uninitialized on the replacement
      assertEquals(List.of(1), GrpcPsClient.of(next).refillLost(copy, " kept by executor 7"));
      assertEquals(List.of(), GrpcPsClient.of(next).refillLost(copy, " kept by executor 7"), "a refilled shard is refilled once");
      assertArrayEquals(held.get("b").ravel().toFloatVector(), next.pull("b").ravel().toFloatVector(), 0f);
      assertArrayEquals(held.get("w").ravel().toFloatVector(), next.pull("w").ravel().toFloatVector(), 0f);
      // Shard 0 was not lost: a push after the copy stays there, the refill leaves it alone.
      next.push(gradients(2));
      INDArray w = next.pull("w");
      GrpcPsClient.of(next).refillLost(copy, " kept by executor 7");
      assertArrayEquals(w.ravel().toFloatVector(), next.pull("w").ravel().toFloatVector(), 0f);
    }
    assertEquals(1, reports.restored.size(), reports.restored.toString());
    assertTrue(reports.restored.get(0).matches("1@3: worker 1's copy of step 3 \\[b, w\\] kept by executor 7"),
        reports.restored.get(0));
  }

  /**
   * An embedding model's worker: its copy holds the rows of its last pull too. The replacement gets
   * its share of the table back from them (no checkpoint here): the rows the worker last pulled, as
   * it pulled them; others start afresh.
   */
  @Test
  void theRowsAWorkerLastPulled_refillTheReplacementsShareOfTheTable() {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    EmbeddingSpec items = EmbeddingSpec.builder().setName("items").setDim(2).optOptimizer("SGD", 1).optInit(0, 1)
        .build();
    long[] ids = java.util.stream.LongStream.rangeClosed(1, 40).toArray();
    float[] pulled;
    LastCopy copy;
    try (PsClient worker1 = client(List.of(s0.address(), s1.address()), 1, new Reports())) {
      declare(worker1).initializeAll();
      EmbeddingTable table = worker1.embeddingTable(items);
      float[] ones = new float[ids.length * 2];
      java.util.Arrays.fill(ones, 1f);
      for (int step = 0; step < 3; step++) {
        table.pull(ids, step);
        table.push(ids, ones, step);
      }
      pulled = table.pull(ids, 3); // every row -3 after three SGD steps of rate 1 from 0
      worker1.pullInto(arrays());
      copy = GrpcPsClient.of(worker1).lastCopy();
    }
    assertEquals(-3f, pulled[0], 0f);
    s1.close();
    ParameterServer replacement = server(1);
    Reports reports = new Reports();
    try (PsClient next = client(List.of(s0.address(), replacement.address()), 0, reports)) {
      declare(next);
      assertEquals(List.of(1), GrpcPsClient.of(next).refillLost(copy, ""));
      float[] now = next.embeddingTable(items).read(ids);
      assertArrayEquals(pulled, now, 0f, "every row as the worker last pulled it, on both shards");
    }
    long onReplacement = java.util.Arrays.stream(ids).filter(id -> EmbeddingTable.shardOf(id, 2) == 1).count();
    assertTrue(onReplacement > 0 && onReplacement < ids.length);
    assertEquals(1, reports.restored.size(), reports.restored.toString());
    assertTrue(reports.restored.get(0).endsWith("; " + onReplacement + " rows of 'items' from worker 1's pull of step 3"),
        reports.restored.get(0));
  }

  @Test
  void aPullCutOffByTheEndOfTheTask_isNamedInTheCopy() {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    try (PsClient worker = client(List.of(s0.address(), s1.address()), 1, new Reports())) {
      declare(worker).initializeAll();
      Map<String, INDArray> held = arrays();
      worker.pullInto(held);
      assertTrue(GrpcPsClient.of(worker).lastCopy().cutOff().isEmpty());
      s1.close(); // the next pull fails half way: shard 0's part of w may be new, shard 1's not
      assertThrows(PsException.class, () -> worker.pullInto(held));
      LastCopy copy = GrpcPsClient.of(worker).lastCopy();
      assertEquals(Set.of("b", "w"), copy.cutOff());
      assertTrue(copy.toString().contains("[b, w] partly of the next: its pull was cut off"), copy.toString());
    }
  }

  @Test
  void aClientWithoutARefillingSupervisor_holdsNoCopy_andACopyOfAnotherRunIsRefused() {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    Map<String, INDArray> held = arrays();
    LastCopy copy;
    try (PsClient reader = client(List.of(s0.address(), s1.address()), 1, null);
         PsClient worker = client(List.of(s0.address(), s1.address()), 0, new Reports())) {
      declare(worker).initializeAll();
      reader.pullInto(held);
      assertNull(GrpcPsClient.of(reader).lastCopy(), "a reader's copy is older than the workers': it never refills");
      assertNull(GrpcPsClient.of(worker).lastCopy(), "no pull yet: nothing but the initializers");
      worker.pullInto(held);
      copy = GrpcPsClient.of(worker).lastCopy();
    }
    try (PsClient other = client(List.of(s0.address()), 0, new Reports())) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GrpcPsClient.of(other).refillLost(copy, ""));
      assertTrue(e.getMessage().contains("the copy is of 2 ps shards, this client has 1"), e.getMessage());
    }
  }
}
