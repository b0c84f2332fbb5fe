package io.sparkps.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.spark.util.kvstore.InMemoryStore;
import org.junit.jupiter.api.Test;

/** The tab's store stays bounded however long a run or an application goes on, and keeps what matters. */
class RunStoreTest {
  private static SparkPsEvents.StepsRecorded steps(String run, long first, int workerRows, int evaluatorRows) {
    SparkPsEvents.StepsRecorded e = new SparkPsEvents.StepsRecorded();
    e.runId = run;
    e.first = first;
    for (int i = 0; i < workerRows + evaluatorRows; i++) {
      SparkPsEvents.StepRow r = new SparkPsEvents.StepRow();
      r.role = i < workerRows ? "CHIEF" : "EVALUATOR";
      r.step = first + i;
      r.metrics = Map.of("loss", 1.0);
      e.rows.add(r);
    }
    return e;
  }

  private static SparkPsEvents.RunUpdate run(String id, long started) {
    SparkPsEvents.RunUpdate u = new SparkPsEvents.RunUpdate();
    u.runId = id;
    u.name = "n";
    u.status = "SUCCEEDED";
    u.startedMillis = started;
    return u;
  }

  @Test
  void aLongRun_isThinnedPastItsBound_keepingEveryEvaluation_andOldRunsLoseTheirRecordsNotTheirState() {
    RunStore store = new RunStore(new InMemoryStore());
    SparkPsListener listener = new SparkPsListener(store);
    listener.onOtherEvent(run("long", 0));
    listener.onOtherEvent(steps("long", 0, 60_000, 10));
    listener.onOtherEvent(steps("long", 60_010, 60_000, 10));
    List<SparkPsEvents.StepRow> rows = store.steps("long");
    assertTrue(rows.size() <= RunStore.MAX_RECORDS_PER_RUN, "held " + rows.size());
    assertEquals(60_020, rows.size(), "half the worker steps and every evaluation");
    assertEquals(20, rows.stream().filter(r -> r.role.equals("EVALUATOR")).count());
    for (int i = 1; i < rows.size(); i++) {
      assertTrue(rows.get(i).step > rows.get(i - 1).step, "in order");
    }
    for (int n = 1; n <= RunStore.MAX_RUNS_WITH_RECORDS; n++) {
      listener.onOtherEvent(run("r" + n, n));
      listener.onOtherEvent(steps("r" + n, 0, 5, 1));
    }
    assertEquals(List.of(), store.steps("long"), "the oldest run's records are dropped");
    assertEquals(6, store.steps("r1").size());
    assertEquals(RunStore.MAX_RUNS_WITH_RECORDS + 1, store.runs().size(), "every run's state is kept");
    assertEquals("r20", store.runs().get(0).runId, "the latest first");
  }
}
