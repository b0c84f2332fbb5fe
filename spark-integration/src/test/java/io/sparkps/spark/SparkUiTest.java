package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.testing.Chromium;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run seen where Spark users look, in a real browser: the live Spark UI's SparkPS tab while it
 * runs, the History Server's tab (a separate process reading the event log) after the
 * application ended, and the {@code sparkps} metrics source through Spark's CSV sink.
 */
class SparkUiTest {
  private static final int HALF = 60;
  /** Holds the workers half-way, while the test looks at the live tab (local mode: one JVM). */
  static final CountDownLatch RELEASE = new CountDownLatch(1);

  static Float worker(WorkerContext<Integer> ctx) throws Exception {
    ctx.ps().create(VariableSpec.of("w"));
    if (ctx.isChief()) {
      ctx.ps().initializeAll();
    } else {
      ctx.ps().awaitInitialized(List.of("w"), Duration.ofSeconds(30));
    }
    for (int step = 1; step <= 2 * HALF; step++) {
      ctx.ps().assignAdd("w", 1.0);
      double loss = 1.0 / step + 0.01 * ctx.index();
      ctx.progress().report(step, step * 10L, Map.of("loss", loss, "computeMs", 2.0, "pullMs", 1.0));
      if (step == HALF && !RELEASE.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test did not release the workers within 120 s");
      }
    }
    return 0f;
  }

  @Test
  void theLiveTab_theHistoryServersTab_andTheMetricsSink_showTheRun(@TempDir Path dir) throws Exception {
    Path events = Files.createDirectories(dir.resolve("events"));
    Path csv = Files.createDirectories(dir.resolve("metrics"));
    JavaSparkContext sc = new JavaSparkContext(SparkTestSupport.conf("local[4]").setAppName("sparkps-ui-test")
        .set("spark.ui.enabled", "true").set("spark.ui.port", "0")
        .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", events.toUri().toString())
        .set("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink")
        .set("spark.metrics.conf.*.sink.csv.period", "1").set("spark.metrics.conf.*.sink.csv.unit", "seconds")
        .set("spark.metrics.conf.*.sink.csv.directory", csv.toString()));
    String appId = sc.sc().applicationId();
    String runId;
    try {
      ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optName("ui-test")
          .optHeartbeatInterval(Duration.ofMillis(200)).build();
      TrainingJob<Float> job = new TrainingCluster(sc, spec).runAsync(
          sc.parallelize(IntStream.range(0, 4).boxed().toList(), 2), SparkUiTest::worker);
      runId = job.runId();
      String tab = sc.sc().uiWebUrl().get() + "/sparkps/";
      // live: both workers held at step HALF; the page shows the run going, with HALF steps a worker
      waitFor(() -> count(lossChart(get(tab)), "class=\"raw\" data-points=\"" + HALF + "\"") == 2,
          "the live tab to show " + HALF + " steps of each worker", 60);
      String live = Chromium.dumpDom(tab, 3000);
      Chromium.screenshot(tab, Path.of("target", "sparkps-tab-live.png"), 1280, 2000); // for people to look at
      assertTrue(live.contains(">SparkPS</a>"), "Spark's header lists the SparkPS tab");
      assertStylesLoad(tab, live);
      assertTrue(live.contains("st-RUNNING"), "the run is shown running");
      assertTrue(live.contains(runId));
      assertEquals(2, count(lossChart(live), "class=\"raw\" data-points=\"" + HALF + "\""), "a raw loss curve a worker");
      assertTrue(count(live, "<td>chief</td>") == 1 && count(live, "<td>worker</td>") == 1, "the roles");
      RELEASE.countDown();
      job.get(Duration.ofMinutes(2));
      String done = Chromium.dumpDom(tab + "?run=" + runId, 1000);
      assertTrue(done.contains("st-SUCCEEDED"), "the run is shown succeeded");
      assertEquals(2, count(lossChart(done), "class=\"raw\" data-points=\"" + 2 * HALF + "\""));
      sc.sc().env().metricsSystem().report();
    } finally {
      RELEASE.countDown();
      sc.stop();
    }
    // the metrics sink: the latest run's gauges and the runs' counters
    assertEquals(2.0 * 2 * HALF, lastCsvValue(csv, appId + ".driver.sparkps.run.steps.csv"));
    assertEquals(1.0, lastCsvValue(csv, appId + ".driver.sparkps.runs.succeeded.csv"));
    double loss = lastCsvValue(csv, appId + ".driver.sparkps.run.loss.csv");
    assertEquals((1.0 / (2 * HALF) + 1.0 / (2 * HALF) + 0.01) / 2, loss, 1e-9);
    // the History Server, from the event log alone
    try (HistoryServerProcess history = new HistoryServerProcess(events)) {
      String page = history.url() + "/history/" + appId + "/sparkps/";
      waitFor(() -> history.lists(appId), "the History Server to list " + appId, 90);
      String dom = Chromium.dumpDom(page, 3000);
      Chromium.screenshot(page, Path.of("target", "sparkps-tab-history.png"), 1280, 2000);
      assertTrue(dom.contains(">SparkPS</a>"), "the History Server's header lists the SparkPS tab");
      assertStylesLoad(page, dom);
      assertTrue(dom.contains(runId) && dom.contains("st-SUCCEEDED"), "the finished run");
      assertEquals(2, count(lossChart(dom), "class=\"raw\" data-points=\"" + 2 * HALF + "\""), "each worker's every step");
      assertTrue(dom.contains("<td>ui-test</td>"), "the run's name");
    }
  }

  /** Spark's stylesheets that the page links to are served (the page looks like Spark's own). */
  static void assertStylesLoad(String pageUrl, String dom) {
    Matcher css = Pattern.compile("<link rel=\"stylesheet\" href=\"([^\"]+)\"").matcher(dom);
    int found = 0;
    while (css.find()) {
      String url = URI.create(pageUrl).resolve(css.group(1)).toString();
      assertTrue(get(url).contains("{"), "the stylesheet " + url + " is served");
      found++;
    }
    assertEquals(2, found, "bootstrap.min.css and webui.css");
  }

  /** The training loss chart of a page (empty when it has none). */
  static String lossChart(String page) {
    int at = page.indexOf("aria-label=\"Training loss\"");
    return at < 0 ? "" : page.substring(at, page.indexOf("</svg>", at));
  }

  static int count(String s, String needle) {
    int n = 0;
    for (int i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + 1)) {
      n++;
    }
    return n;
  }

  private static double lastCsvValue(Path dir, String file) throws IOException {
    List<String> lines = Files.readAllLines(dir.resolve(file));
    String last = lines.get(lines.size() - 1);
    return Double.parseDouble(last.substring(last.indexOf(',') + 1));
  }

  static String get(String url) {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
      c.setConnectTimeout(5000);
      c.setReadTimeout(10000);
      try (var in = c.getInputStream()) {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
      }
    } catch (IOException e) {
      return "";
    }
  }

  static void waitFor(java.util.function.BooleanSupplier condition, String what, int seconds) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("waited " + seconds + " s for " + what);
      }
      Thread.sleep(250);
    }
  }

  /** Spark's History Server in a process of its own, on this test's class path, reading {@code events}. */
  static final class HistoryServerProcess implements AutoCloseable {
    private final Process process;
    private final int port;

    HistoryServerProcess(Path events) throws IOException {
      try (ServerSocket s = new ServerSocket(0)) {
        port = s.getLocalPort();
      }
      List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
      for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
        if (a.startsWith("--add-opens") || a.startsWith("--add-exports")) {
          cmd.add(a);
        }
      }
      cmd.addAll(List.of("-Xmx512m", "-cp", System.getProperty("java.class.path"),
          "-Dspark.history.fs.logDirectory=" + events.toUri(), "-Dspark.history.ui.port=" + port,
          "-Dspark.history.fs.update.interval=1s", "-Dspark.ui.enabled=true",
          "org.apache.spark.deploy.history.HistoryServer"));
      process = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(events.resolveSibling("history-server.log").toFile()).start();
    }

    String url() {
      return "http://127.0.0.1:" + port;
    }

    boolean lists(String appId) {
      if (!process.isAlive()) {
        throw new AssertionError("the History Server exited (" + process.exitValue() + ")");
      }
      Matcher m = Pattern.compile(Pattern.quote(appId)).matcher(get(url() + "/api/v1/applications"));
      return m.find();
    }

    @Override
    public void close() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }
}
