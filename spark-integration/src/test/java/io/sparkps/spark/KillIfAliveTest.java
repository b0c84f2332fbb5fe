package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.reflect.Proxy;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The fault tests' cleanup of a stopped executor: the run may have had it killed between the test's
 * look and its kill (a .ci/run's ChaosTest failed on "kill -KILL ... failed" that way). The test
 * holds the look here: the handle says alive once, for a process that has already ended.
 */
class KillIfAliveTest {
  /** A handle of {@code real} whose first {@code isAlive()} says yes, whatever the process is. */
  private static ProcessHandle seenAliveOnce(ProcessHandle real) {
    boolean[] seen = {false};
    return (ProcessHandle) Proxy.newProxyInstance(ProcessHandle.class.getClassLoader(),
        new Class<?>[] {ProcessHandle.class}, (proxy, method, args) -> {
          if (method.getName().equals("isAlive") && !seen[0]) {
            seen[0] = true;
            return true;
          }
          return method.invoke(real, args);
        });
  }

  @Test
  void aProcessThatEndedAfterTheLook_isNoFailure_aLiveOneIsKilled() throws Exception {
    Process ended = new ProcessBuilder("sleep", "60").start();
    ended.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    // Sending the signal to it fails (the test's own process reaped it: no such process)...
    assertThrows(java.io.IOException.class, () -> LocalClusters.signal(ended.toHandle(), "KILL"));
    // ...and is no failure once it is seen gone after the look.
    LocalClusters.killIfAlive(seenAliveOnce(ended.toHandle()));

    Process live = new ProcessBuilder("sleep", "60").start();
    LocalClusters.killIfAlive(live.toHandle());
    live.waitFor(10, TimeUnit.SECONDS);
    assertFalse(live.isAlive(), "killed");
  }
}
