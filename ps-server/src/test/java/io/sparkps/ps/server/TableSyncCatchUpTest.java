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
}
