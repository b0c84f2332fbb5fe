package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.TableRefill;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.wire.ProtoConvert;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A ps holding part of an embedding table dies during training, over real sockets: the worker that
 * refills its replacement recreates the table there and restores the ps's share of the rows from the
 * newest checkpoint, then sets the rows it last pulled to what it pulled; the rows of the surviving
 * ps are untouched, the replaced one's rows of the last pull lost only that pull's update, its other
 * rows the updates since the checkpoint, exactly, and the supervisor is told so. Without a
 * checkpoint the rows not in the last pull come back empty, and that is said too.
 */
class TableRefillTest {
  private static final int STEPS = 30;
  private static final int SAVE_AT = 10;
  private static final int KILL_AT = 20;
  private static final long[] IDS = java.util.stream.LongStream.range(0, 40).toArray();
  /** The ids of the last step before the kill: the rows the worker holds when the ps dies. */
  private static final long[] LAST_PULLED = java.util.stream.LongStream.range(0, 20).toArray();
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new CopyOnWriteArrayList<>();
  @TempDir
  Path dir;

  @AfterEach
  void stop() {
    servers.forEach(ParameterServer::close);
  }

  private ParameterServer server(int shard) {
    ParameterServer ps = ParameterServer.builder().setShardIndex(shard).setToken(token).optHost("127.0.0.1").build().start();
    servers.add(ps);
    return ps;
  }

  /** Where shard 1 serves now, and what the client reported. */
  private static final class Supervisor implements ShardRecovery {
    volatile String shard1;
    final List<String> restored = new CopyOnWriteArrayList<>();

    @Override
    public String awaitReplacement(int shard, String lost) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (shard == 1 && shard1.equals(lost) && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      return shard == 1 ? shard1 : null;
    }

    @Override
    public void restored(int shard, long step, String source) {
      restored.add(shard + ": " + source);
    }
  }

  /**
   * One worker trains {@link #STEPS} steps: each pulls every id (the step before the kill only
   * {@link #LAST_PULLED}) and pushes -1 for each (SGD at rate 1: every row goes up by 1 a step), saves
   * a checkpoint after step {@link #SAVE_AT} when {@code checkpoint}; shard 1 is closed before step
   * {@link #KILL_AT} and replaced. Returns the rows.
   */
  private float[] train(Supervisor supervisor, boolean checkpoint) {
    return train(supervisor, checkpoint, address -> {});
  }

  /** As above; {@code replaced} is told the replacement's address before the worker's next call. */
  private float[] train(Supervisor supervisor, boolean checkpoint, java.util.function.Consumer<String> replaced) {
    ParameterServer s0 = server(0);
    ParameterServer s1 = server(1);
    supervisor.shard1 = s1.address();
    String ckpt = dir.resolve("ckpt-10").toUri().toString();
    try (PsClient ps = PsClient.builder().setShards(List.of(s0.address(), s1.address())).setToken(token)
        .optCallTimeout(Duration.ofSeconds(20)).optRecovery(supervisor).build()) {
      ps.createGroup(ConsistencyGroup.async("g"));
      ps.create(VariableSpec.builder().setName("w").setShape(8, 4).optInitializer(Initializer.constant(1))
          .optOptimizer(OptimizerConfig.sgd(0.5)).optGroup("g").build());
      ps.initializeAll();
      EmbeddingTable table = ps.embeddingTable(EmbeddingSpec.builder().setName("items").setDim(1)
          .optOptimizer("SGD", 1).optInit(0, 1).build());
      java.util.concurrent.atomic.AtomicBoolean saved = new java.util.concurrent.atomic.AtomicBoolean();
      GrpcPsClient.of(ps).setTableRefill(() -> saved.get() ? new TableRefill.Checkpoint(ckpt, SAVE_AT) : null);
      INDArray copy = Nd4j.create(DataType.FLOAT, 8, 4);
      float[] minusOnes = new float[IDS.length];
      java.util.Arrays.fill(minusOnes, -1);
      for (int step = 0; step < STEPS; step++) {
        if (step == KILL_AT) {
          s1.close();
          String address = server(1).address();
          replaced.accept(address);
          supervisor.shard1 = address;
        }
        long[] ids = step == KILL_AT - 1 ? LAST_PULLED : IDS;
        ps.pullInto(Map.of("w", copy));
        table.pull(ids, step);
        ps.push(Map.of("w", Nd4j.ones(DataType.FLOAT, 8, 4)));
        table.push(ids, java.util.Arrays.copyOf(minusOnes, ids.length), step);
        if (checkpoint && step == SAVE_AT) {
          ps.save(ckpt);
          saved.set(true);
        }
      }
      return table.read(IDS);
    }
  }

  @Test
  void aReplacedPsGetsItsTableRowsFromTheCheckpoint_losingOnlyTheUpdatesSince() {
    Supervisor supervisor = new Supervisor();
    float[] rows = train(supervisor, true);
    int onReplaced = 0;
    int heldOnReplaced = 0;
    for (int i = 0; i < IDS.length; i++) {
      boolean replaced = EmbeddingTable.shardOf(IDS[i], 2) == 1;
      onReplaced += replaced ? 1 : 0;
      heldOnReplaced += replaced && IDS[i] < LAST_PULLED.length ? 1 : 0;
      assertEquals(expected(IDS[i], replaced, 11), rows[i], 1e-6, "id " + IDS[i] + (replaced ? " on the replaced ps" : ""));
    }
    assertTrue(heldOnReplaced > 2 && onReplaced - heldOnReplaced > 2, heldOnReplaced + " of " + onReplaced + " on ps 1");
    assertEquals(1, supervisor.restored.size(), supervisor.restored.toString());
    String said = supervisor.restored.get(0);
    // (the variable w lives on ps 0: the replaced ps held only table rows)
    assertEquals("1: embedding tables [items] from the checkpoint of step 10 (" + (onReplaced + 1) + " rows with the "
        + "default ones; their updates on it after step 10, up to step " + KILL_AT + ", are lost); " + heldOnReplaced
        + " rows of 'items' from worker 0's pull of step " + (KILL_AT - 1), said);
  }

  /**
   * A row's value at the end: on the surviving ps, every update it got (30, or 29 when it was not in
   * the last step before the kill); on the replaced one, a row of the worker's last pull has what was
   * pulled (19) and the 10 steps after; the others what the table came back with ({@code restored}:
   * 11 from the checkpoint, 0 without) and the 10 steps after.
   */
  private static float expected(long id, boolean replaced, int restored) {
    boolean held = id < LAST_PULLED.length;
    if (!replaced) {
      return held ? 30f : 29f;
    }
    return held ? KILL_AT - 1 + 10f : restored + 10f;
  }

  /**
   * Two workers refill a replacement at once, and the one that reports it (the first to refill its
   * variables) is not the one whose tables refill came first (held here: "another worker" refills the
   * tables before this one gets to them): what it reports is still the checkpoint the tables came
   * from and the updates lost, not only that another worker refilled them.
   */
  @Test
  void aReplacementWhoseTablesAnotherWorkerRefilledFirst_isStillReportedWithItsCheckpoint() {
    Supervisor supervisor = new Supervisor();
    String ckpt = dir.resolve("ckpt-10").toUri().toString();
    EmbeddingSpec spec = EmbeddingSpec.builder().setName("items").setDim(1).optOptimizer("SGD", 1).optInit(0, 1)
        .build();
    float[] rows = train(supervisor, true, address -> {
      io.sparkps.ps.grpc.Connections other = new io.sparkps.ps.grpc.Connections(List.of(address, address), token,
          null, Duration.ofSeconds(20), 1 << 20, false);
      try {
        io.sparkps.ps.grpc.ShardStub replacement = other.stubs().get(1);
        io.sparkps.ps.grpc.ShardStub.await(replacement.createEmbedding(ProtoConvert.toProto(spec)), Duration.ofSeconds(20));
        io.sparkps.ps.grpc.proto.SnapshotReply first = io.sparkps.ps.grpc.ShardStub.await(replacement.restore(
            io.sparkps.ps.grpc.proto.SnapshotRequest.newBuilder().setPath(ckpt).setTablesOnly(true).build()),
            Duration.ofSeconds(20));
        assertEquals(1, first.getTables(), "the other worker's refill came first");
      } finally {
        other.close();
      }
    });
    for (int i = 0; i < IDS.length; i++) {
      assertEquals(expected(IDS[i], EmbeddingTable.shardOf(IDS[i], 2) == 1, 11), rows[i], 1e-6, "id " + IDS[i]);
    }
    assertEquals(1, supervisor.restored.size(), supervisor.restored.toString());
    assertTrue(supervisor.restored.get(0).startsWith("1: embedding tables [items] from the checkpoint of step 10 ("),
        supervisor.restored.toString());
  }

  @Test
  void withoutACheckpoint_theTableComesBackEmpty_andThatIsSaid() {
    Supervisor supervisor = new Supervisor();
    float[] rows = train(supervisor, false);
    for (int i = 0; i < IDS.length; i++) {
      assertEquals(expected(IDS[i], EmbeddingTable.shardOf(IDS[i], 2) == 1, 0), rows[i], 1e-6, "id " + IDS[i]);
    }
    assertTrue(supervisor.restored.get(0).contains("embedding tables [items] empty again: no checkpoint"),
        supervisor.restored.toString());
  }
}
