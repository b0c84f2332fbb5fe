package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.RegistryDriver;
import io.sparkps.spark.coord.proto.Role;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Every listener gets the run's whole history and its end, whenever it is added: before the first
 * record, while the run goes on (after the others were handed records), or after the end. (The
 * MLflow tracker is added after the listeners a fit adds first, and once missed every step a busy
 * driver had handed those before it.)
 */
class ListenersTest {
  /** The steps and the end a listener was told of, in order. */
  private static final class Told implements ProgressListener {
    final List<Long> steps = new CopyOnWriteArrayList<>();
    final List<JobStatus> ends = new CopyOnWriteArrayList<>();

    @Override
    public void onProgress(TaskProgress p) {
      if (p.metrics().containsKey("loss")) {
        assertEquals(p.step() * 0.5, p.metrics().get("loss"), 0.0);
        steps.add(p.step());
      }
    }

    @Override
    public void onEnd(JobStatus status, Throwable failure) {
      ends.add(status);
    }
  }

  private static void awaitSteps(Told told, int n) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (told.steps.size() < n) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("listener was told " + told.steps + " in 10 s, not " + n + " steps");
      }
      Thread.sleep(10);
    }
  }

  private final Registry registry = new Registry(1, 1);
  private final RegistryDriver tasks = new RegistryDriver(registry);
  private final Listeners listeners = new Listeners("run-1", registry);

  @org.junit.jupiter.api.BeforeEach
  void aChief() {
    tasks.register(Role.CHIEF, 0, 0, "localhost", 1, "exec-0", 1);
  }

  private static void awaitEnds(Told... told) throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (java.util.Arrays.stream(told).anyMatch(t -> t.ends.isEmpty()) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
  }

  @Test
  void aListenerAddedWhileTheRunGoesOn_orAfterItsEnd_isToldTheWholeHistory_andTheEnd() throws Exception {
    for (long step = 1; step <= 3; step++) {
      tasks.record(Role.CHIEF, 0, 0, step, Map.of("loss", step * 0.5));
    }
    Told first = new Told();
    listeners.add(first);
    awaitSteps(first, 3); // the history so far is handed on: a later listener comes after that

    Told second = new Told();
    listeners.add(second);
    tasks.record(Role.CHIEF, 0, 0, 4, Map.of("loss", 2.0));
    awaitSteps(second, 4);
    awaitSteps(first, 4);
    listeners.end(JobStatus.SUCCEEDED, null);
    awaitEnds(first, second);
    assertEquals(List.of(1L, 2L, 3L, 4L), first.steps);
    assertEquals(List.of(1L, 2L, 3L, 4L), second.steps, "added after the first was handed steps 1-3");
    assertEquals(List.of(JobStatus.SUCCEEDED), first.ends);
    assertEquals(List.of(JobStatus.SUCCEEDED), second.ends);

    Told late = new Told();
    listeners.add(late);
    assertEquals(List.of(1L, 2L, 3L, 4L), late.steps, "told at once, when added after the end");
    assertEquals(List.of(JobStatus.SUCCEEDED), late.ends);
    assertEquals(List.of(JobStatus.SUCCEEDED), first.ends, "the end is told once");
  }

  @Test
  void aListenerThatThrows_isDropped_andTheOthersAreToldEverything() throws Exception {
    List<Long> seenByFaulty = new CopyOnWriteArrayList<>();
    listeners.add(p -> {
      if (p.metrics().containsKey("loss")) {
        seenByFaulty.add(p.step());
        throw new IllegalStateException("a listener's own bug");
      }
    });
    Told good = new Told();
    listeners.add(good);
    tasks.record(Role.CHIEF, 0, 0, 1, Map.of("loss", 0.5));
    tasks.record(Role.CHIEF, 0, 0, 2, Map.of("loss", 1.0));
    awaitSteps(good, 2);
    listeners.end(JobStatus.FAILED, new RuntimeException("boom"));
    awaitEnds(good);
    assertEquals(List.of(1L), seenByFaulty, "dropped after its first throw");
    assertEquals(List.of(1L, 2L), good.steps);
    assertEquals(List.of(JobStatus.FAILED), good.ends);
  }
}
