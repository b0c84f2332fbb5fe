package io.sparkps.ml.tracking;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * The tracker against a real {@code mlflow server}, read back with MLflow's own Python client: a
 * run of 10,000 steps logs every one of them, its params past one request's limit, and its end with
 * its cause; a server that refuses at first is tried again and loses nothing; a server that is down
 * never holds up the run's end.
 */
@EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
class MlflowTrackingTest {
  private static MlflowServer server;

  @BeforeAll
  static void start() throws Exception {
    server = MlflowServer.shared();
  }

  private static TaskProgress step(Role role, int index, long step, Map<String, Double> metrics) {
    return new TaskProgress(role, index, "h", "1", 0, step, step * 64, metrics, "", 0, 1_800_000_000_000L + step);
  }

  private static MlflowTracking.Settings settings(String uri, String run) {
    return MlflowTracking.Settings.of(uri, "sparkps-tests", run, Map.of("team", "ml"), Map.of());
  }

  @Test
  void tenThousandSteps_areEveryOneLogged_andTheRunEndsFailedWithItsCause() throws Exception {
    Map<String, String> params = new LinkedHashMap<>();
    for (int i = 0; i < 150; i++) {
      params.put("p" + i, "v" + i); // past the 100 params one request may carry
    }
    params.put("long", "x".repeat(7000));
    MlflowTracking t = MlflowTracking.start(settings(server.uri(), "ten-thousand"), params, Map.of());
    for (long s = 1; s <= 10_000; s++) {
      t.onProgress(step(Role.CHIEF, 0, s, Map.of("loss", 1.0 / s, "stepMs", 5.0)));
      t.onProgress(step(Role.WORKER, 1, s, Map.of("loss", 2.0 / s)));
      if (s % 100 == 0) {
        t.onProgress(step(Role.EVALUATOR, 0, s, Map.of("accuracy", s / 10_000.0)));
      }
    }
    t.onProgress(new TaskProgress(Role.PS, 0, "h", "1", 0, 0, 0, Map.of(), "serving", 0));
    t.onEnd(JobStatus.FAILED, new IllegalStateException("worker 1 was silent for 20.1 s"));
    assertTrue(t.awaitEnd(Duration.ofSeconds(180)), "the run's end reached MLflow");
    assertEquals(5 * 10_000 + 100, t.logged(), "loss, stepMs and examples of the chief, loss and examples of worker 1, "
        + "100 evaluations");

    JsonNode run = server.read(t.runId(), "loss", "worker1/loss", "eval/accuracy", "examples");
    assertEquals("FAILED", run.path("status").asText());
    assertEquals("ten-thousand", run.path("run_name").asText());
    assertEquals("sparkps-tests", run.path("experiment").asText());
    assertEquals("worker 1 was silent for 20.1 s", run.path("tags").path("sparkps.failure").asText());
    assertEquals("ml", run.path("tags").path("team").asText());
    assertEquals(151, run.path("params").size());
    assertEquals("v149", run.path("params").path("p149").asText());
    assertEquals(6000, run.path("params").path("long").asText().length(), "cut to MLflow's limit");
    JsonNode loss = run.path("metrics").path("loss");
    assertEquals(10_000, loss.size(), "every step's loss");
    for (int i = 0; i < loss.size(); i++) {
      long s = loss.get(i).get(0).asLong();
      assertEquals(1.0 / s, loss.get(i).get(1).asDouble(), 1e-12, "step " + s);
    }
    assertEquals(10_000, run.path("metrics").path("worker1/loss").size());
    assertEquals(100, run.path("metrics").path("eval/accuracy").size());
    assertEquals(640_000.0, lastValue(run.path("metrics").path("examples")), "the examples the chief processed");
  }

  private static double lastValue(JsonNode history) {
    double max = Double.NEGATIVE_INFINITY;
    for (JsonNode h : history) {
      max = Math.max(max, h.get(1).asDouble());
    }
    return max;
  }

  @Test
  void aServerThatRefusesAtFirst_isTriedAgain_withTheCredentials_andNothingIsLost() throws Exception {
    AtomicInteger refusals = new AtomicInteger(7);
    List<String> authorizations = java.util.Collections.synchronizedList(new ArrayList<>());
    // The first batches of metrics are refused, as by a server restarting: each call is tried
    // again, then its batch waits and is sent again.
    HttpServer proxy = proxy((request, authorization) -> {
      authorizations.add(authorization);
      return request.contains("\"metrics\":[{") && refusals.getAndDecrement() > 0 ? 503 : 0;
    });
    try {
      String uri = "http://127.0.0.1:" + proxy.getAddress().getPort();
      MlflowTracking t = MlflowTracking.start(settings(uri, "refused"), Map.of("lr", "0.1"),
          Map.of("MLFLOW_TRACKING_TOKEN", "secret-token"), Duration.ofSeconds(10), 50);
      for (long s = 1; s <= 3000; s++) {
        t.onProgress(step(Role.CHIEF, 0, s, Map.of("loss", 1.0 / s)));
      }
      t.onEnd(JobStatus.CANCELLED, null);
      assertTrue(t.awaitEnd(Duration.ofSeconds(120)));
      assertTrue(refusals.get() < 0, "every refusal was met");
      JsonNode run = server.read(t.runId(), "loss");
      assertEquals("KILLED", run.path("status").asText(), "a cancelled run");
      assertEquals(3000, run.path("metrics").path("loss").size(), "nothing lost to the refusals");
      assertEquals("0.1", run.path("params").path("lr").asText());
      assertTrue(authorizations.size() > 8 && authorizations.stream().allMatch("Bearer secret-token"::equals),
          authorizations.toString());
    } finally {
      proxy.stop(0);
    }
  }

  /**
   * A proxy before the tests' server: a request {@code refuse} gives a status for (its body and
   * Authorization header) is answered with it (503: TEMPORARILY_UNAVAILABLE, else INVALID_PARAMETER_VALUE),
   * any other is passed on.
   */
  private static HttpServer proxy(java.util.function.BiFunction<String, String, Integer> refuse) throws IOException {
    HttpServer proxy = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    proxy.createContext("/", exchange -> {
      byte[] request = exchange.getRequestBody().readAllBytes();
      byte[] body;
      int status = refuse.apply(new String(request, java.nio.charset.StandardCharsets.UTF_8),
          exchange.getRequestHeaders().getFirst("Authorization"));
      if (status != 0) {
        body = (status == 503 ? "{\"error_code\":\"TEMPORARILY_UNAVAILABLE\",\"message\":\"busy\"}"
            : "{\"error_code\":\"INVALID_PARAMETER_VALUE\",\"message\":\"refused\"}").getBytes();
      } else {
        HttpURLConnection c = (HttpURLConnection) URI.create(server.uri() + exchange.getRequestURI()).toURL()
            .openConnection();
        c.setRequestMethod(exchange.getRequestMethod());
        if (request.length > 0) {
          c.setDoOutput(true);
          c.setRequestProperty("Content-Type", "application/json");
          try (OutputStream out = c.getOutputStream()) {
            out.write(request);
          }
        }
        status = c.getResponseCode();
        try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
          body = in.readAllBytes();
        }
      }
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    proxy.start();
    return proxy;
  }

  @Test
  void aBatchTheServerRefusesForWhatItHolds_isCountedOnce_andTheBatchesAfterItGoOn() throws Exception {
    // The batch that holds step 1 is refused every time it is sent, as one with a value the server does not take.
    AtomicInteger refusals = new AtomicInteger();
    HttpServer proxy = proxy((request, authorization) -> request.contains("\"step\":1}") && refusals
        .incrementAndGet() > 0 ? 400 : 0);
    try {
      MlflowTracking t = MlflowTracking.start(settings("http://127.0.0.1:" + proxy.getAddress().getPort(),
          "refused-once"), Map.of("lr", "0.1"), Map.of(), Duration.ofSeconds(10), 50);
      for (long s = 1; s <= 3000; s++) {
        t.onProgress(step(Role.CHIEF, 0, s, Map.of("loss", 1.0 / s)));
      }
      long ended = System.nanoTime();
      t.onEnd(JobStatus.SUCCEEDED, null);
      assertTrue(t.awaitEnd(Duration.ofSeconds(50)), "not held up until the flush's deadline (60 s)");
      assertEquals(1, refusals.get(), "refused once, not sent again");
      assertEquals(1000, t.notLogged(), "the one batch refused");
      assertEquals(5000, t.logged(), "loss and examples of 3,000 steps, less the batch refused");
      JsonNode run = server.read(t.runId(), "loss");
      assertEquals("FINISHED", run.path("status").asText());
      assertEquals("1000", run.path("tags").path("sparkps.metricsNotLogged").asText());
      assertTrue(run.path("metrics").path("loss").size() >= 2000, "the batches after the refused one");
      assertTrue(System.nanoTime() - ended < 50_000_000_000L);
    } finally {
      proxy.stop(0);
    }
  }

  @Test
  void aRunThatExists_isLoggedInto_keepsItsParams_andIsLeftToItsOwnerToEnd() throws Exception {
    MlflowRest rest = new MlflowRest(server.uri(), Map.of(), Duration.ofSeconds(30), 500);
    MlflowRest.Run owned = rest.createRun(rest.experimentId("sparkps-tests"), "owned", System.currentTimeMillis(),
        Map.of());
    rest.logBatch(owned.id(), List.of(), Map.of("batchSize", "64"), Map.of()); // as autolog logs the Params first
    MlflowTracking t = MlflowTracking.start(MlflowTracking.Settings.of(server.uri(), "", "", Map.of("team", "ml"),
        owned.id(), Map.of()), Map.of("batchSize", "32", "numWorkers", "2"), Map.of());
    for (long s = 1; s <= 100; s++) {
      t.onProgress(step(Role.CHIEF, 0, s, Map.of("loss", 1.0 / s)));
    }
    t.onEnd(JobStatus.SUCCEEDED, null);
    assertTrue(t.awaitEnd(Duration.ofSeconds(60)));
    assertEquals(owned.id(), t.runId());
    assertEquals(0, t.notLogged());
    JsonNode run = server.read(owned.id(), "loss");
    assertEquals("RUNNING", run.path("status").asText(), "its owner ends it");
    assertEquals("owned", run.path("run_name").asText());
    assertEquals("64", run.path("params").path("batchSize").asText(), "MLflow refuses a param changed");
    assertEquals("2", run.path("params").path("numWorkers").asText(), "a setting the run lacked");
    assertEquals("ml", run.path("tags").path("team").asText());
    assertEquals(100, run.path("metrics").path("loss").size());
    rest.endRun(owned.id(), "FINISHED", System.currentTimeMillis());
  }

  @Test
  void aServerThatIsDown_neverHoldsUpTheRun_andWhatWasNotLoggedIsCounted() throws Exception {
    int closed;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      closed = s.getLocalPort();
    }
    MlflowTracking t = MlflowTracking.start(settings("http://127.0.0.1:" + closed, "down"), Map.of(), Map.of(),
        Duration.ofSeconds(2), 50);
    for (long s = 1; s <= 100; s++) {
      t.onProgress(step(Role.CHIEF, 0, s, Map.of("loss", 1.0 / s)));
    }
    t.onEnd(JobStatus.SUCCEEDED, null);
    assertTrue(t.awaitEnd(Duration.ofSeconds(30)), "the end is not held up by the server");
    assertNull(t.runId());
    assertEquals(0, t.logged());
    assertEquals(200, t.notLogged(), "loss and examples of 100 steps, counted");
  }

  @Test
  void aTrackingUriThatIsNoServer_isRefusedNamingIt_andTheSettingsComeFromTheEnvironment() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> settings("file:///data/mlruns", "x"));
    assertTrue(e.getMessage().contains("MLflow tracking URI 'file:///data/mlruns' is not http(s)://host:port"),
        e.getMessage());
    assertTrue(!MlflowTracking.Settings.of("", "", "", Map.of(), Map.of("MLFLOW_TRACKING_URI", "file:///data/mlruns"))
        .on(), "a local store named by the environment: not tracked, and the fit goes on");
    MlflowTracking.Settings fromEnv = MlflowTracking.Settings.of("", "", "", Map.of(),
        Map.of("MLFLOW_TRACKING_URI", "http://mlflow:5000", "MLFLOW_EXPERIMENT_NAME", "ctr"));
    assertEquals("http://mlflow:5000", fromEnv.trackingUri());
    assertEquals("ctr", fromEnv.experimentName());
    assertTrue(fromEnv.on());
    assertEquals("Default", MlflowTracking.Settings.of("http://a:1", "", "", Map.of(), Map.of()).experimentName());
    assertTrue(!MlflowTracking.Settings.of("", "", "", Map.of(), Map.of()).on(), "off without a URI");
  }
}
