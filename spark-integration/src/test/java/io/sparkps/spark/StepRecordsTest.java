package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.PsToken;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.CoordinatorServer;
import io.sparkps.spark.coord.Member;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.Progress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Every recorded step of a worker reaches the driver's history and its listeners, in order, over real heartbeats. */
class StepRecordsTest {
  private static final PsToken TOKEN = PsToken.generate();

  @Test
  void everyStep_reachesTheHistoryAndTheListeners_inOrder_withItsMetrics() throws Exception {
    Registry registry = new Registry(1, 1);
    Listeners listeners = new Listeners("t", registry);
    List<TaskProgress> heard = new CopyOnWriteArrayList<>();
    listeners.add(new ProgressListener() {
      @Override
      public void onProgress(TaskProgress p) {
        heard.add(p);
      }
    });
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", TOKEN, null, registry);
         CoordinatorClient client = new CoordinatorClient(server.address(), TOKEN, null, Duration.ofSeconds(10))) {
      client.register(io.sparkps.spark.coord.proto.Role.CHIEF, 0, "h", 0, 0, "e");
      try (Heartbeats beats = new Heartbeats(client, Role.CHIEF, 0, 0, Duration.ofMillis(20), 100, 1)) {
        for (int step = 1; step <= 600; step++) {
          beats.report(step, step * 32L, Map.of("loss", 1.0 / step, "pullMs", step % 7.0));
          if (step % 50 == 0) {
            Thread.sleep(30); // several heartbeats carry the steps
          }
        }
        beats.message("done");
        beats.finished();
      }
      List<Member> steps = registry.history().stream().filter(m -> m.progress().getMetricsCount() > 0).toList();
      assertEquals(600, steps.size());
      for (int i = 0; i < 600; i++) {
        Progress p = steps.get(i).progress();
        assertEquals(i + 1, p.getStep());
        assertEquals(1.0 / (i + 1), p.getMetricsOrThrow("loss"));
        assertEquals((i + 1) * 32L, p.getExamples());
        assertTrue(p.getTimeMillis() > 0);
      }
      // the status line joins the history once, without a copy of the last step's metrics
      List<Member> lines = registry.history().stream().filter(m -> m.progress().getMessage().equals("done")).toList();
      assertEquals(1, lines.size());
      assertEquals(0, lines.get(0).progress().getMetricsCount());
      listeners.end(JobStatus.SUCCEEDED, null);
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (heard.stream().filter(p -> !p.metrics().isEmpty()).count() < 600 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      List<Long> heardSteps = new ArrayList<>();
      heard.stream().filter(p -> !p.metrics().isEmpty()).forEach(p -> heardSteps.add(p.step()));
      assertEquals(java.util.stream.LongStream.rangeClosed(1, 600).boxed().toList(), heardSteps);
      assertEquals(0, registry.recordsNotKept());
    }
  }

  @Test
  void everyNthStep_isRecorded_andTheLastStepWhateverTheInterval() throws Exception {
    Registry registry = new Registry(1, 1);
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", TOKEN, null, registry);
         CoordinatorClient client = new CoordinatorClient(server.address(), TOKEN, null, Duration.ofSeconds(10))) {
      client.register(io.sparkps.spark.coord.proto.Role.CHIEF, 0, "h", 0, 0, "e");
      try (Heartbeats beats = new Heartbeats(client, Role.CHIEF, 0, 0, Duration.ofHours(1), 100, 10)) {
        for (int step = 1; step <= 25; step++) {
          beats.report(step, step, Map.of("loss", (double) step));
        }
        beats.finished();
      }
      assertEquals(List.of(10L, 20L, 25L), registry.history().stream().map(m -> m.progress().getStep()).toList());
    }
  }

  @Test
  void aTaskThatFails_stillSendsItsLastSteps_whenItsHeartbeatsClose() throws Exception {
    Registry registry = new Registry(1, 1);
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", TOKEN, null, registry);
         CoordinatorClient client = new CoordinatorClient(server.address(), TOKEN, null, Duration.ofSeconds(10))) {
      client.register(io.sparkps.spark.coord.proto.Role.CHIEF, 0, "h", 0, 0, "e");
      Heartbeats beats = new Heartbeats(client, Role.CHIEF, 0, 0, Duration.ofHours(1), 100, 1);
      Thread.sleep(300); // the first beat (at once) is done: the next would come in an hour
      for (int step = 1; step <= 50; step++) {
        beats.report(step, step, Map.of("loss", (double) step));
      }
      beats.close(); // as a failing task's try-with-resources does, without finished()
      assertEquals(50, registry.history().size());
      assertEquals(50, registry.history().get(49).progress().getStep());
    }
  }

  @Test
  void recordsThatDidNotArrive_goBackInOrder_andPastTheCapacityTheOldestAreDroppedAndCounted() {
    PendingRecords records = new PendingRecords(4);
    for (int step = 1; step <= 6; step++) {
      records.add(Progress.newBuilder().setStep(step).setTimeMillis(1).build());
    }
    assertEquals(2, records.dropped()); // steps 1 and 2
    List<Progress> beat = records.take(3);
    assertEquals(List.of(3L, 4L, 5L), beat.stream().map(Progress::getStep).toList());
    records.add(Progress.newBuilder().setStep(7).setTimeMillis(1).build());
    records.putBack(beat); // the beat failed: they go back before 6 and 7, as room allows (4 and 5; 3 is dropped)
    assertEquals(List.of(4L, 5L, 6L, 7L), records.take(10).stream().map(Progress::getStep).toList());
    assertEquals(3, records.dropped());
    assertTrue(records.isEmpty());
  }
}
