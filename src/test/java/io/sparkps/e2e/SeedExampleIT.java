package io.sparkps.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.example.SeedExample;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The Distributed TensorFlow tutorial's final example, each role a separate JVM: one ps, two
 * workers adding 1.0 five times each after the chief's initialization.
 */
class SeedExampleIT {
  private static final long WAIT_SECONDS = 120;

  @Test
  void onePsTwoWorkers_separateProcesses_endAtExactlyTen() throws Exception {
    PsToken token = PsToken.generate();
    List<Process> all = new ArrayList<>();
    try {
      Process ps = SeedExample.launch(token, "ps", "--port", "0");
      all.add(ps);
      String address = SeedExample.awaitReady(ps);
      // Worker 1 starts first: it must wait for the chief's initialization, not fail.
      Process worker1 = SeedExample.launch(token, "worker", "--index", "1", "--ps", address);
      all.add(worker1);
      Thread.sleep(500);
      Process chief = SeedExample.launch(token, "worker", "--index", "0", "--ps", address);
      all.add(chief);
      for (Process w : List.of(chief, worker1)) {
        assertTrue(w.waitFor(WAIT_SECONDS, TimeUnit.SECONDS), "worker did not finish in time");
        assertEquals(0, w.exitValue(), "worker exit code");
      }
      try (PsClient client = PsClient.builder().setShards(List.of(address)).setToken(token).build()) {
        assertEquals(10.0f, client.pull("counter").getFloat(0));
        VariableInfo info = client.listVariables().get(0);
        assertEquals(10, info.version(), "ten assignAdds, one version each");
        assertTrue(info.initialized());
        client.shutdownServers();
      }
      assertTrue(ps.waitFor(30, TimeUnit.SECONDS), "the ps did not stop after shutdown");
      assertEquals(0, ps.exitValue(), "ps exit code");
    } finally {
      all.forEach(Process::destroyForcibly);
    }
  }

  @Test
  void localMode_runsAllRolesAndExitsZero() throws Exception {
    Process local = new ProcessBuilder(java(), "-cp", System.getProperty("java.class.path"),
        SeedExample.class.getName(), "local").redirectErrorStream(true).start();
    try {
      String output = new String(local.getInputStream().readAllBytes());
      assertTrue(local.waitFor(WAIT_SECONDS, TimeUnit.SECONDS));
      assertEquals(0, local.exitValue(), output);
      assertTrue(output.contains("final value on the ps: 10.0"), output);
    } finally {
      local.destroyForcibly();
    }
  }

  private static String java() {
    return java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }
}
