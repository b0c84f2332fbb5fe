package io.sparkps.spark.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.RegistryDriver;
import io.sparkps.spark.coord.proto.Role;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The supervisor's decisions on a clock moved by hand: which role is lost when, whose executor
 * is killed, which stage attempt is killed, and when the run gives up on a ps. The actions are
 * recorded instead of done to Spark.
 */
class SupervisorTest {
  private static final Duration ROLE_TIMEOUT = Duration.ofSeconds(20);
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Registry registry = new Registry(1, 2, clock::get);
  private final RegistryDriver tasks = new RegistryDriver(registry);
  private final Recorded actions = new Recorded();
  /** 1 ps, heartbeats every second, a maxStageAttempts of 2 and a ps task's 100 attempts per launch. */
  private final Supervisor.Policy spec = new Supervisor.Policy(1, Duration.ofSeconds(1), ROLE_TIMEOUT, 2, 100);
  private final Supervisor supervisor = new Supervisor(actions, registry, spec);

  /** What the supervisor asked for, in order; ps 0's task runs until {@link #ended} says otherwise. */
  private static final class Recorded implements Supervisor.Actions {
    final List<String> log = new ArrayList<>();
    final Map<Integer, Integer> launches = new HashMap<>(Map.of(0, 1));
    String ended;
    /** Runs once, the first time the supervisor asks how often a ps was launched: while it acts on a decision. */
    Runnable whileDeciding;

    @Override
    public String runId() {
      return "test";
    }

    @Override
    public String psEnded(int index) {
      return ended;
    }

    @Override
    public int psLaunches(int index) {
      if (whileDeciding != null) {
        Runnable r = whileDeciding;
        whileDeciding = null;
        r.run();
      }
      return launches.getOrDefault(index, 0);
    }

    @Override
    public void relaunchPs(int index) {
      launches.merge(index, 1, Integer::sum);
      ended = null;
      log.add("relaunch ps " + index);
    }

    @Override
    public boolean killExecutor(String executorId, String reason) {
      log.add("kill executor " + executorId);
      return true;
    }

    @Override
    public void killTasks(List<Long> taskIds, String reason) {
      log.add("kill tasks " + taskIds + " (" + reason.substring(0, reason.indexOf(" was silent")) + ")");
    }
  }

  @BeforeEach
  void roles() {
    tasks.register(Role.PS, 0, 0, "h1", 7000, "1", 10);
    tasks.register(Role.CHIEF, 0, 0, "h2", 0, "2", 11);
    tasks.register(Role.WORKER, 1, 0, "h3", 0, "3", 12);
  }

  private void pass(Duration d, Role... beating) {
    clock.addAndGet(d.toNanos());
    for (Role r : beating) {
      tasks.beat(r, r == Role.WORKER ? 1 : 0, 0, 5);
    }
  }

  @Test
  void aPsSilentForTheRoleTimeout_isLost_itsExecutorKilled_andRelaunched_notBefore() {
    pass(ROLE_TIMEOUT.minusMillis(1), Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of(), actions.log, "silent for a millisecond less than the role timeout: nothing");
    pass(Duration.ofMillis(2), Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of("kill executor 1", "relaunch ps 0"), actions.log);
    PsRecovery r = PsRecoveries.of(registry).get(0);
    assertTrue(r.reason().startsWith("it was silent: ps 0 on h1 (executor 1) was silent for 20.0 s"), r.reason());
    assertEquals(5, r.atStep(), "the furthest worker step");
    supervisor.check();
    assertEquals(2, actions.log.size(), "declared once: its replacement is on its way");
  }

  @Test
  void aPsWhoseTaskEnded_isRelaunched_withoutKillingItsExecutor() {
    actions.ended = " (ExecutorLostFailure)";
    supervisor.check();
    assertEquals(List.of("relaunch ps 0"), actions.log);
    assertTrue(PsRecoveries.of(registry).get(0).reason().startsWith("its task ended (ExecutorLostFailure) at h1:7000"));
  }

  @Test
  void aPsAWorkerCouldNotReach_isLostAfterThreeSilentHeartbeats_notOneThatBeatsAgain() throws Exception {
    assertEquals(null, tasks.suspect(0, "h1:7000")); // a worker's call failed there; no answer yet
    pass(Duration.ofMillis(2900), Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of(), actions.log, "under three heartbeats");
    pass(Duration.ofMillis(200), Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of("kill executor 1", "relaunch ps 0"), actions.log);

    // A suspicion the ps answers with a heartbeat is dropped.
    tasks.register(Role.PS, 0, 100, "h4", 7001, "4", 13); // the relaunch's first attempt
    assertEquals(null, tasks.suspect(0, "h4:7001"));
    pass(Duration.ofSeconds(1), Role.PS);
    pass(Duration.ofSeconds(5), Role.PS, Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(2, actions.log.size(), "the replacement beats: " + actions.log);
  }

  /**
   * Spark's own retry of a killed ps's task registers at another address after the supervisor saw
   * the ps unreachable and before it declared the loss (held there by the test): the decision was
   * about the old address, so the retry keeps serving as the replacement. Declaring the current
   * address lost instead killed the retry's executor and relaunched over it, so that the workers
   * that had moved to it lost it too (a second loss of the shard in PsFailureTest).
   */
  @Test
  void aRetryRegisteredWhileTheSupervisorActs_isNotDeclaredLostNorRelaunchedOver() throws Exception {
    assertEquals(null, tasks.suspect(0, "h1:7000"));
    pass(Duration.ofMillis(3100), Role.CHIEF, Role.WORKER);
    actions.whileDeciding = () -> tasks.register(Role.PS, 0, 1, "h4", 7001, "4", 13);
    supervisor.check();
    assertEquals(List.of(), actions.log, "the retry serves: no executor killed, nothing relaunched");
    List<PsRecovery> recoveries = PsRecoveries.of(registry);
    assertEquals(1, recoveries.size(), recoveries.toString());
    assertEquals("h1:7000", recoveries.get(0).lostAddress());
    assertEquals("h4:7001", recoveries.get(0).replacement());
    assertTrue(recoveries.get(0).reason().startsWith("its task failed and Spark retried it (attempt 1)"),
        recoveries.toString());
    assertEquals(List.of("h4:7001"), registry.psAddresses());
    pass(Duration.ofSeconds(1), Role.PS, Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of(), actions.log);
  }

  /**
   * The other order: the supervisor declares the unreachable ps lost and relaunches it before
   * Spark's retry of the old launch registers. The retry is refused (its job was cancelled), so
   * the slot waits for the relaunch's task.
   */
  @Test
  void aRetryRegisteringAfterTheSupervisorRelaunched_isRefused() throws Exception {
    assertEquals(null, tasks.suspect(0, "h1:7000"));
    pass(Duration.ofMillis(3100), Role.CHIEF, Role.WORKER);
    supervisor.check();
    assertEquals(List.of("kill executor 1", "relaunch ps 0"), actions.log);
    RuntimeException refused = assertThrows(RuntimeException.class,
        () -> tasks.register(Role.PS, 0, 1, "h4", 7001, "4", 13));
    assertTrue(refused.getMessage().contains("only attempts from 100 on may register"), refused.getMessage());
    tasks.register(Role.PS, 0, 100, "h5", 7002, "5", 14);
    assertEquals(List.of("h5:7002"), registry.psAddresses());
  }

  @Test
  void aSilentWorker_hasItsAttemptKilledOnce_andItsExecutorReplaced_aFinishedOneIsNotWatched() {
    tasks.finish(Role.CHIEF, 0, 0); // the chief's work is done: its silence from now on is no hang
    pass(ROLE_TIMEOUT.plusSeconds(1), Role.PS);
    supervisor.check();
    supervisor.check();
    assertEquals(List.of("kill tasks [11, 12] (sparkps: worker 1 on h3 (executor 3))", "kill executor 3"), actions.log);
    assertEquals(1, registry.failures().size(), "the finished chief was not taken for silent");
    assertTrue(registry.failures().get(0).getError().getMessage().contains("its stage attempt was killed to be retried"));
    assertEquals(null, registry.finalFailure(spec.maxStageAttempts()), "transient: the stage is retried");
  }

  @Test
  void aPsLostMoreOftenThanMaxStageAttempts_endsTheRun_namingIt() {
    actions.ended = "";
    supervisor.check(); // lost at its first launch: relaunched
    tasks.register(Role.PS, 0, 100, "h4", 7001, "4", 13);
    actions.ended = " (again)";
    supervisor.check(); // lost at its second: relaunched
    tasks.register(Role.PS, 0, 200, "h5", 7002, "5", 14);
    actions.ended = " (killed again)";
    PsLostTooOftenException f = assertThrows(PsLostTooOftenException.class, supervisor::check);
    assertTrue(f.getMessage().startsWith("ps 0 was lost 3 times, more than maxStageAttempts (2) allows; the last time "
        + "because its task ended (killed again) at h5:7002"), f.getMessage());
    assertEquals(List.of(0, 3), List.of(f.shard(), f.launches()), "the ps given up on, and its launches");
    assertEquals(List.of("relaunch ps 0", "relaunch ps 0"), actions.log);
  }

  @Test
  void oneRefill_makesGoodEveryLossOfItsShardAwaitingOne_andARefillWithoutALossRecordsNothing() {
    tasks.refilled(0, 0, 7, "the checkpoint of step 7 (a resumed run)");
    assertEquals(List.of(), PsRecoveries.of(registry), "no loss, no recovery");
    actions.ended = "";
    supervisor.check(); // lost at h1:7000
    tasks.register(Role.PS, 0, 100, "h4", 7001, "4", 13);
    actions.ended = " (again)";
    supervisor.check(); // its replacement lost too, before anyone refilled it
    tasks.register(Role.PS, 0, 200, "h5", 7002, "5", 14);
    tasks.refilled(0, 1, 9, "worker 1's copy of step 9");
    List<PsRecovery> recoveries = PsRecoveries.of(registry);
    assertEquals(List.of("h1:7000 -> h4:7001", "h4:7001 -> h5:7002"), recoveries.stream()
        .map(r -> r.lostAddress() + " -> " + r.replacement()).toList());
    assertTrue(recoveries.stream().allMatch(r -> "worker 1's copy of step 9".equals(r.source())), recoveries.toString());
  }
}
