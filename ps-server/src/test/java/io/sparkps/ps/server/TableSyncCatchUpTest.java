package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.GroupSpec;
import org.junit.jupiter.api.Test;

/**
 * A SYNC table that came back from a checkpoint behind the workers: the push of the step before a
 * worker's pull went to the ps this one replaced, and the table never sees it. Reproduced on
 * purpose (the restored table takes its step from the other worker's retried push; the held
 * worker only pulls): before, the pull waited for the puller itself until its timeout (a run that
 * then failed in every stage attempt); now the pull counts the lost push and the step completes.
 */
class TableSyncCatchUpTest {
  private static final GroupSpec SYNC = GroupSpec.newBuilder().setName("g").setMode(ConsistencyMode.SYNC)
      .setNumWorkers(2).build();

  @Test
  void aPullOfTheNextStep_countsThePullersLostPush_andTheStepCompletes() {
    TableSync restored = new TableSync("t", 1, SYNC);
    // worker 0's push of step 120 failed with the lost ps and is retried on the refilled one
    assertNull(restored.push(0, new long[] {7L}, new float[] {2f, 4f}, 120, 2));
    // worker 1's push of step 120 reached the lost ps before it died: it pulls step 121
    assertTrue(restored.blocker(1, 121).contains("waits for workers [1] to push step 120"),
        "what the pull waited for before: " + restored.blocker(1, 121));
    TableSync.Apply applied = restored.catchUp(1, 121, 2);
    assertNotNull(applied, "worker 1's push of 120 counts (empty): the step completes");
    assertArrayEquals(new long[] {7L}, applied.ids());
    assertArrayEquals(new float[] {1f, 2f}, applied.gradients(), "worker 0's gradient over the 2 workers");
    assertNull(restored.blocker(1, 121));
    assertNull(restored.blocker(0, 121));
    assertNull(restored.catchUp(1, 121, 2), "once is enough");
  }

  @Test
  void aTableSeveralStepsBehind_movesOnToTheStepBeforeThePull_whichBothPullsComplete() {
    TableSync restored = new TableSync("t", 1, SYNC);
    assertNull(restored.push(0, new long[] {3L}, new float[] {5f, 5f}, 40, 2)); // a retried push of an old step
    assertNull(restored.catchUp(0, 45, 2), "worker 0 pulls 45: the table moves on to 44, counting 0's push");
    assertTrue(restored.blocker(0, 45).contains("is at step 44") && restored.blocker(0, 45).contains("[1]"),
        restored.blocker(0, 45));
    TableSync.Apply applied = restored.catchUp(1, 45, 2);
    assertNotNull(applied, "worker 1's pull of 45 completes step 44");
    assertEquals(0, applied.ids().length, "step 40's partial push was dropped with the steps it stood for");
    assertNull(restored.blocker(0, 45));
  }

  @Test
  void inARunWithoutAReplacement_pullsChangeNothing() {
    TableSync table = new TableSync("t", 1, SYNC);
    assertNull(table.push(0, new long[] {1L}, new float[] {1f, 1f}, 0, 2));
    assertNull(table.catchUp(0, 1, 2), "worker 0 pushed step 0 here: nothing lost");
    assertNull(table.catchUp(0, 0, 2), "a pull of the table's own step");
    assertTrue(table.blocker(0, 1).contains("waits for workers [1]"), table.blocker(0, 1));
    assertNotNull(table.push(1, new long[0], new float[0], 0, 2));
    assertNull(table.blocker(0, 1));
  }

  /**
   * The push path of the same case, as ChaosTest once met it: worker 1 pulled step 122 from the ps
   * before it died, so its next call to the refilled one is its push of 122, with the table at 121
   * (from worker 0's retried push). Before, the push was refused ("pushed gradients for SYNC step
   * 122 but the table is at step 121") and the run failed; now it counts the pusher's lost push of
   * 121 first, step 121 completes, and worker 0's push of 122 completes 122.
   */
  @Test
  void aPushOfTheNextStep_countsThePushersLostPushFirst() {
    EmbeddingTables tables = new EmbeddingTables(1, name -> SYNC);
    io.sparkps.ps.grpc.proto.EmbeddingSpecProto spec = io.sparkps.ps.grpc.proto.EmbeddingSpecProto.newBuilder()
        .setName("t").setDim(2).setOptimizer("SGD").setLearningRate(1).setGroup("g").setMaxRowsPerShard(100)
        .setMinCount(1).build();
    tables.replace(spec, tables.newRows(spec)); // as a restore from a checkpoint makes it
    int[] applied = {0};
    tables.onStepApplied(() -> applied[0]++);
    tables.push("t", 0, new long[] {7L}, new float[] {2f, 4f}, 121); // worker 0's retried push of 121
    tables.push("t", 1, new long[] {7L}, new float[] {6f, 6f}, 122);
    assertEquals(1, applied[0], "step 121 completed when worker 1's push of 122 arrived");
    assertTrue(tables.blocker("t", 0, 122) == null, "step 121 is applied: worker 0 may pull 122");
    tables.push("t", 0, new long[] {7L}, new float[] {2f, 2f}, 122);
    assertTrue(tables.blocker("t", 1, 123) == null, "step 122 completed with both workers' pushes");
  }

  /** A table that did not come back from a checkpoint refuses a push ahead of it, as before. */
  @Test
  void aPushAheadOfANewTable_isRefused() {
    EmbeddingTables tables = new EmbeddingTables(1, name -> SYNC);
    tables.create(io.sparkps.ps.grpc.proto.EmbeddingSpecProto.newBuilder().setName("t").setDim(2)
        .setOptimizer("SGD").setLearningRate(1).setGroup("g").setMaxRowsPerShard(100).setMinCount(1).build());
    tables.push("t", 0, new long[] {7L}, new float[] {2f, 4f}, 121);
    io.sparkps.ps.wire.PsError refused = org.junit.jupiter.api.Assertions.assertThrows(io.sparkps.ps.wire.PsError.class,
        () -> tables.push("t", 1, new long[] {7L}, new float[] {6f, 6f}, 122));
    assertTrue(refused.getMessage().contains("pushed gradients for SYNC step 122 but the table is at step 121"),
        refused.getMessage());
  }
}
