package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A command stopped as a scheduler or Ctrl-C stops it (SIGTERM) still leaves its run's record. */
class StoppedRunTest {
  @TempDir
  Path dir;

  @Test
  void sigterm_cancelsTheRun_andLeavesSummaryAndReport_withStatusCancelled() throws Exception {
    Path csv = dir.resolve("points.csv");
    Files.write(csv, List.of("x,y,label", "0.1,0.2,0", "0.9,0.8,1", "0.2,0.1,0", "0.8,0.9,1"));
    Path run = dir.resolve("run");
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx1g"));
    java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(a -> a.startsWith("--add-opens") || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
            || a.startsWith("-Djdk.reflect")).forEach(command::add);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), SparkPsCli.class.getName(), "train", "--data",
        csv.toString(), "--feature-cols", "x,y", "--workers", "1", "--network", "mlp:4", "--epochs", "1000000",
        "--no-progress", "--output", run.toString()));
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(dir.resolve("out.txt").toFile());
    pb.environment().put("OMP_NUM_THREADS", "1");
    Process p = pb.start();
    try {
      Path metrics = run.resolve("metrics.jsonl");
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (!(Files.exists(metrics) && Files.readAllLines(metrics).size() >= 20)) {
        assertTrue(p.isAlive(), "the command ended early: " + Files.readString(dir.resolve("out.txt")));
        assertTrue(System.nanoTime() < deadline, "no 20 steps recorded within 120 s");
        Thread.sleep(200);
      }
      p.destroy(); // SIGTERM
      assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the command did not stop within 60 s of SIGTERM");
    } finally {
      p.destroyForcibly();
    }
    JsonNode summary = new ObjectMapper().readTree(run.resolve("summary.json").toFile());
    assertEquals("CANCELLED", summary.get("status").asText(), summary.toString());
    assertTrue(summary.get("cause").asText().contains("cancelled"), summary.toString());
    assertTrue(summary.get("stepsDone").get("worker0").asLong() >= 20, summary.toString());
    assertTrue(Files.readString(run.resolve("report.html")).contains("class=\"badge CANCELLED\""));
    String out = Files.readString(dir.resolve("out.txt"));
    assertTrue(out.contains("sparkps: stopped; run ") && out.contains("cancelled, its record: ")
        && out.contains("summary.json"), out);
  }
}
