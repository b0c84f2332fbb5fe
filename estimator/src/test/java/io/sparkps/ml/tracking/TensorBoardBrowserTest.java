package io.sparkps.ml.tracking;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.testing.Chromium;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * The event files of two runs, as fits write them, served by a real TensorBoard (the requirements'
 * tensorboard, started on them) and opened in headless Chromium: TensorBoard lists both runs, each
 * one's scalars with their values and its histograms at their steps, and its time series page shows
 * the runs' table and a card for each scalar.
 */
@EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
class TensorBoardBrowserTest {
  /** How long TensorBoard may take to start and load the files. */
  private static final Duration START = Duration.ofSeconds(120);
  @TempDir
  Path dir;

  private void run(String name, double lossScale) {
    TensorBoardLogging t = TensorBoardLogging.start(new org.apache.hadoop.fs.Path(dir.resolve(name).toUri()),
        new Configuration()).histograms(() -> Map.of("0_W", new float[] {-1, 0, 1, 2}), 50);
    long t0 = 1_800_000_000_000L;
    for (long s = 1; s <= 200; s++) {
      t.onProgress(new TaskProgress(Role.CHIEF, 0, "h", "1", 0, s, s * 64, Map.of("loss", lossScale / s), "", 0,
          t0 + 10 * s));
      if (s % 50 == 0) {
        t.onProgress(new TaskProgress(Role.EVALUATOR, 0, "h", "1", 0, s, 0, Map.of("accuracy", s / 200.0), "", 0,
            t0 + 10 * s));
      }
    }
    t.onEnd(JobStatus.SUCCEEDED, null);
  }

  @Test
  void tensorBoardServesAndShowsEachRunsScalarsAndHistograms() throws Exception {
    run("fit-a", 1.0);
    run("fit-b", 2.0);
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path log = dir.resolve("tensorboard.log");
    Process tensorboard = new ProcessBuilder(MlflowServer.python(), "-m", "tensorboard.main", "--logdir",
        dir.toString(), "--host", "127.0.0.1", "--port", Integer.toString(port), "--load_fast", "false")
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    String base = "http://127.0.0.1:" + port;
    try {
      JsonNode tags = awaitTags(base, tensorboard, log);
      assertEquals(List.of("fit-a", "fit-b"), names(tags));
      assertTrue(tags.path("fit-a").has("loss") && tags.path("fit-a").has("eval/accuracy"), tags.toString());
      JsonNode loss = get(base + "/data/plugin/scalars/scalars?run=fit-b&tag=loss");
      assertEquals(200, loss.size());
      assertEquals(3, loss.get(2).get(1).asLong(), "[wall time, step, value]");
      assertEquals(2.0 / 3, loss.get(2).get(2).asDouble(), 1e-6);
      JsonNode histograms = get(base + "/data/plugin/histograms/tags");
      assertTrue(histograms.path("fit-a").has("params/0_W"), histograms.toString());
      JsonNode w = get(base + "/data/plugin/histograms/histograms?run=fit-a&tag=" + java.net.URLEncoder.encode(
          "params/0_W", java.nio.charset.StandardCharsets.UTF_8));
      assertEquals(List.of(1L, 50L, 100L, 150L, 200L), steps(w), "the histograms' steps");

      // The page as a user opens it: the time series dashboard lists the runs and shows the loss's card.
      String dom = Chromium.dumpDom(base + "/#timeseries", 15_000);
      assertTrue(dom.contains("> fit-a <") && dom.contains("> fit-b <"), "the runs' table: " + tail(dom));
      assertTrue(dom.contains("title=\"eval/accuracy\"") && dom.contains("title=\"loss\""), "the scalars' cards: "
          + tail(dom));
    } finally {
      tensorboard.destroy();
      if (!tensorboard.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
        tensorboard.destroyForcibly();
      }
    }
  }

  private static JsonNode awaitTags(String base, Process tensorboard, Path log) throws Exception {
    long deadline = System.nanoTime() + START.toNanos();
    while (true) {
      try {
        JsonNode tags = get(base + "/data/plugin/scalars/tags");
        if (tags.size() == 2) {
          return tags;
        }
      } catch (IOException notYet) {
        // starting
      }
      if (!tensorboard.isAlive() || System.nanoTime() > deadline) {
        throw new AssertionError("TensorBoard at " + base + " did not serve both runs within " + START.toSeconds()
            + " s (alive: " + tensorboard.isAlive() + "); its log:\n" + Files.readString(log));
      }
      Thread.sleep(500);
    }
  }

  private static JsonNode get(String url) throws IOException, InterruptedException {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException(url + " answered " + r.statusCode());
    }
    return new ObjectMapper().readTree(r.body());
  }

  private static List<String> names(JsonNode object) {
    List<String> names = new java.util.ArrayList<>();
    object.fieldNames().forEachRemaining(names::add);
    names.sort(null);
    return names;
  }

  private static List<Long> steps(JsonNode events) {
    List<Long> steps = new java.util.ArrayList<>();
    events.forEach(e -> steps.add(e.get(1).asLong()));
    return steps;
  }

  private static String tail(String dom) {
    return dom.length() > 2000 ? dom.substring(dom.length() - 2000) : dom;
  }
}
