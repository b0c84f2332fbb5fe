package io.sparkps.ml.tracking;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * TensorBoard event files as a run writes them, read back with TensorBoard's own reader (its
 * EventAccumulator, which checks every record's CRC): every step's scalars at their step and time,
 * each worker's throughput, the evaluations, one run per subdirectory.
 */
class TensorBoardLoggingTest {
  @TempDir
  Path dir;

  private static TaskProgress step(Role role, int index, long step, long timeMillis, Map<String, Double> metrics) {
    return new TaskProgress(role, index, "h", "1", 0, step, step * 64, metrics, "", 0, timeMillis);
  }

  @Test
  @EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
  void everyStepsScalars_theThroughput_andTheEvaluations_readBackWithTensorBoardsReader() throws Exception {
    Path runDir = dir.resolve("logs").resolve("run-1");
    TensorBoardLogging t = TensorBoardLogging.start(new org.apache.hadoop.fs.Path(runDir.toUri()), new Configuration());
    long t0 = 1_800_000_000_000L;
    for (long s = 1; s <= 2000; s++) {
      t.onProgress(step(Role.CHIEF, 0, s, t0 + 10 * s, Map.of("loss", 1.0 / s, "stepMs", 10.0)));
      t.onProgress(step(Role.WORKER, 1, s, t0 + 20 * s, Map.of("loss", 2.0 / s)));
      if (s % 100 == 0) {
        t.onProgress(step(Role.EVALUATOR, 0, s, t0 + 10 * s, Map.of("accuracy", s / 2000.0)));
      }
    }
    t.onProgress(new TaskProgress(Role.PS, 0, "h", "1", 0, 0, 0, Map.of(), "serving", 0));
    t.onEnd(JobStatus.SUCCEEDED, null);

    JsonNode scalars = MlflowServer.tensorBoardScalars(runDir);
    assertEquals(List.of("eval/accuracy", "examplesPerSecond", "loss", "stepMs", "worker1/examplesPerSecond",
        "worker1/loss"), sorted(scalars));
    JsonNode loss = scalars.path("loss");
    assertEquals(2000, loss.size());
    for (int i = 0; i < loss.size(); i++) {
      long s = loss.get(i).get(0).asLong();
      assertEquals(i + 1, s);
      assertEquals((float) (1.0 / s), loss.get(i).get(1).floatValue(), 0f, "step " + s);
      assertEquals((t0 + 10 * s) / 1000.0, loss.get(i).get(2).asDouble(), 1e-6, "the time the task recorded it");
    }
    assertEquals(2000, scalars.path("worker1/loss").size());
    assertEquals(20, scalars.path("eval/accuracy").size());
    assertEquals(1.0, scalars.path("eval/accuracy").get(19).get(1).asDouble(), 1e-6);
    JsonNode rate = scalars.path("examplesPerSecond");
    assertEquals(1999, rate.size(), "from the second record on");
    assertEquals(6400.0, rate.get(0).get(1).asDouble(), 1e-3, "64 examples in 10 ms");
    assertEquals(3200.0, scalars.path("worker1/examplesPerSecond").get(5).get(1).asDouble(), 1e-3);
  }

  @Test
  @EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
  void histogramsOfTheVariables_everyNStepsOfTheChief_readBackWithTensorBoardsReader() throws Exception {
    Path runDir = dir.resolve("logs").resolve("run-2");
    java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
    TensorBoardLogging t = TensorBoardLogging.start(new org.apache.hadoop.fs.Path(runDir.toUri()), new Configuration())
        .histograms(() -> {
          if (reads.incrementAndGet() == 2) {
            throw new IllegalStateException("ps 0 is unreachable"); // that step's histograms are skipped
          }
          Map<String, float[]> values = new java.util.LinkedHashMap<>();
          values.put("0_W", new float[] {1, 2, 3, 4, Float.NaN});
          values.put("0_b", new float[] {0.5f, 0.5f});
          return values;
        }, 10);
    long t0 = 1_800_000_000_000L;
    for (long s = 1; s <= 35; s++) {
      t.onProgress(step(Role.CHIEF, 0, s, t0 + 10 * s, Map.of("loss", 1.0 / s)));
      t.onProgress(step(Role.WORKER, 1, s, t0 + 10 * s, Map.of("loss", 2.0 / s)));
    }
    t.onEnd(JobStatus.SUCCEEDED, null);

    JsonNode histograms = MlflowServer.tensorBoardHistograms(runDir);
    assertEquals(List.of("params/0_W", "params/0_b"), sorted(histograms));
    JsonNode w = histograms.path("params/0_W");
    List<Long> steps = new java.util.ArrayList<>();
    w.forEach(h -> steps.add(h.get(0).asLong()));
    assertEquals(List.of(1L, 20L, 30L), steps, "the chief's first step, then every 10 (step 10's read failed)");
    assertEquals(4, reads.get());
    for (JsonNode h : w) {
      assertEquals(1.0, h.get(1).asDouble());
      assertEquals(4.0, h.get(2).asDouble());
      assertEquals(4.0, h.get(3).asDouble(), "NaN left out");
      assertEquals(10.0, h.get(4).asDouble());
      assertEquals(30.0, h.get(5).asDouble());
      JsonNode limits = h.get(6);
      JsonNode counts = h.get(7);
      assertEquals(TensorBoardEvents.BUCKETS, limits.size());
      assertEquals(4.0, limits.get(TensorBoardEvents.BUCKETS - 1).asDouble());
      assertEquals(1.1, limits.get(0).asDouble(), 1e-9);
      double total = 0;
      for (JsonNode c : counts) {
        total += c.asDouble();
      }
      assertEquals(4.0, total);
      assertEquals(1.0, counts.get(0).asDouble(), "1 in the first bucket");
      assertEquals(1.0, counts.get(TensorBoardEvents.BUCKETS - 1).asDouble(), "4, the largest, in the last");
    }
    JsonNode b = histograms.path("params/0_b").get(0);
    assertEquals(0.5, b.get(1).asDouble());
    assertEquals(0.5, b.get(2).asDouble());
    assertEquals(List.of(2.0), List.of(b.get(7).get(0).asDouble()), "equal values: one bucket");
    assertEquals(1, b.get(7).size());
  }

  @Test
  void aLogDirectoryOnNoFileSystem_isRefusedNamingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TensorBoardLogging.runDir("nosuchfs://logs/tb", "run", new Configuration()));
    assertTrue(e.getMessage().startsWith("TensorBoard log directory 'nosuchfs://logs/tb' is on no file system"),
        e.getMessage());
  }

  private static List<String> sorted(JsonNode object) {
    List<String> names = new java.util.ArrayList<>();
    object.fieldNames().forEachRemaining(names::add);
    names.sort(null);
    return names;
  }
}
