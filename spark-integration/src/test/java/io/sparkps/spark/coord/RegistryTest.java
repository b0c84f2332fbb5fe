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
