package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The fault tests' cleanup of a stopped executor: the run may have had it killed between the test's
 * look and its kill (a .ci/run's ChaosTest failed on "kill -KILL ... failed" that way). The test
 * holds the look here: the handle says alive once, for a process that has already ended.
 */
class KillIfAliveTest {
  /** A handle of {@code real} whose first {@link #isAlive()} says yes, whatever the process is. */
  private static final class SeenAliveOnce implements ProcessHandle {
    private final ProcessHandle real;
    private boolean seen;

    SeenAliveOnce(ProcessHandle real) {
      this.real = real;
    }

    @Override
    public boolean isAlive() {
      if (!seen) {
        seen = true;
        return true;
      }
      return real.isAlive();
    }

    @Override
    public long pid() {
      return real.pid();
    }

    @Override
    public Optional<ProcessHandle> parent() {
      return real.parent();
    }

    @Override
    public Stream<ProcessHandle> children() {
      return real.children();
    }

    @Override
    public Stream<ProcessHandle> descendants() {
      return real.descendants();
    }

    @Override
    public Info info() {
      return real.info();
    }

    @Override
    public CompletableFuture<ProcessHandle> onExit() {
      return real.onExit();
    }

    @Override
    public boolean supportsNormalTermination() {
      return real.supportsNormalTermination();
    }

    @Override
    public boolean destroy() {
      return real.destroy();
    }

    @Override
    public boolean destroyForcibly() {
      return real.destroyForcibly();
    }

    @Override
    public int compareTo(ProcessHandle other) {
      return real.compareTo(other);
    }
  }

  @Test
  void aProcessThatEndedAfterTheLook_isNoFailure_aLiveOneIsKilled() throws Exception {
    Process ended = new ProcessBuilder("sleep", "60").start();
    ended.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    // Sending the signal to it fails (the test's own process reaped it: no such process)...
    assertThrows(java.io.IOException.class, () -> LocalClusters.signal(ended.toHandle(), "KILL"));
    // ...and is no failure once it is seen gone after the look.
    LocalClusters.killIfAlive(new SeenAliveOnce(ended.toHandle()));

    Process live = new ProcessBuilder("sleep", "60").start();
    LocalClusters.killIfAlive(live.toHandle());
    live.waitFor(10, TimeUnit.SECONDS);
    assertFalse(live.isAlive(), "killed");
  }
}
