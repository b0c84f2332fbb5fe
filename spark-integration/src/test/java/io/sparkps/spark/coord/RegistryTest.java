package io.sparkps.spark.coord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.sparkps.spark.coord.proto.Role;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Races of the registry, each held open on purpose and then released. */
class RegistryTest {
  /**
   * A killed ps's task is retried by Spark; the retry's heartbeats start before it registers. A
   * client asking where the lost ps serves must wait for the registration, not take the new
   * attempt's early beat for the lost one still serving (it then failed its call, and the stage
   * retry restarted the run's shard from its initializers).
   */
  @Test
  void theReplacementsEarlyHeartbeat_doesNotMakeTheLostPsLookAlive() throws Exception {
    AtomicLong clock = new AtomicLong();
    Registry registry = new Registry(1, 2, clock::get);
    registry.setHeartbeatInterval(Duration.ofMillis(200));
    RegistryDriver tasks = new RegistryDriver(registry);
    tasks.register(Role.PS, 0, 0, "h", 1000, "1", 10);
    clock.addAndGet(TimeUnit.SECONDS.toNanos(1));
    // A worker found ps 0 at h:1000 unreachable and asks where it serves now: held until told.
    CompletableFuture<String> where = asks(registry, 0, "h:1000");
    Thread.sleep(300);
    // The retried task (attempt 1) beats before it registers, a whole heartbeat after the question.
    clock.addAndGet(TimeUnit.SECONDS.toNanos(1));
    tasks.beat(Role.PS, 0, 1, 0);
    Thread.sleep(500);
    assertFalse(where.isDone(), "the question was answered by the replacement's early beat: '"
        + (where.isDone() ? where.get() : "") + "'");
    // Released: the retry registers elsewhere, and the question gets its address.
    tasks.register(Role.PS, 0, 1, "h", 2000, "2", 11);
    assertEquals("h:2000", where.get(5, TimeUnit.SECONDS));
    assertEquals(1, registry.losses().size(), registry.losses().toString());
  }

  /**
   * The keeper of a copy from stage attempt 0 waits for the chief of attempt 1 to ask for lost ps:
   * held until the chief asks, then told which; a keeper of an attempt two behind the one running
   * is told to release its copy (the servers trained past it), and so is every keeper once the run stops.
   */
  @Test
  void aKeptCopy_waitsForTheNextAttemptsChief_andIsReleasedWhenStale() throws Exception {
    Registry registry = new Registry(2, 2);
    RegistryDriver tasks = new RegistryDriver(registry);
    tasks.register(Role.CHIEF, 0, 0, "h", 0, "1", 1);
    CompletableFuture<Registry.RefillOrder> kept = keeps(registry, 0);
    Thread.sleep(300);
    assertFalse(kept.isDone(), "answered before the chief asked: " + (kept.isDone() ? kept.get() : ""));
    tasks.register(Role.CHIEF, 0, 1, "h", 0, "1", 2);
    Thread.sleep(300);
    assertFalse(kept.isDone(), "a new attempt alone is no question");
    registry.requestRefill(1, java.util.List.of(1, 0));
    assertEquals(new Registry.RefillOrder(java.util.List.of(0, 1), false), kept.get(5, TimeUnit.SECONDS));
    // A copy of attempt 0 while attempt 2 runs is older than what the servers hold.
    tasks.register(Role.CHIEF, 0, 2, "h", 0, "1", 3);
    assertEquals(new Registry.RefillOrder(java.util.List.of(), true), keeps(registry, 0).get(5, TimeUnit.SECONDS));
    CompletableFuture<Registry.RefillOrder> ofAttempt2 = keeps(registry, 2);
    Thread.sleep(300);
    assertFalse(ofAttempt2.isDone());
    registry.stop();
    assertEquals(new Registry.RefillOrder(java.util.List.of(), true), ofAttempt2.get(5, TimeUnit.SECONDS));
  }

  private static CompletableFuture<Registry.RefillOrder> keeps(Registry registry, int attempt) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return registry.awaitRefill(attempt, 20_000);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
  }

  /** A client's question where ps {@code index}, unreachable at {@code lost}, serves now, asked in the background. */
  private static CompletableFuture<String> asks(Registry registry, int index, String lost) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return registry.awaitPs(index, lost, 20_000, () -> false);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
  }

  @Test
  void aBeatOfTheRegisteredAttempt_stillSaysThePsServes() throws Exception {
    AtomicLong clock = new AtomicLong();
    Registry registry = new Registry(1, 2, clock::get);
    registry.setHeartbeatInterval(Duration.ofMillis(200));
    RegistryDriver tasks = new RegistryDriver(registry);
    tasks.register(Role.PS, 0, 0, "h", 1000, "1", 10);
    CompletableFuture<String> where = asks(registry, 0, "h:1000");
    Thread.sleep(300);
    clock.addAndGet(TimeUnit.SECONDS.toNanos(1));
    tasks.beat(Role.PS, 0, 0, 0);
    assertEquals("", where.get(5, TimeUnit.SECONDS), "heard from at the address asked about: it still serves");
  }
}
