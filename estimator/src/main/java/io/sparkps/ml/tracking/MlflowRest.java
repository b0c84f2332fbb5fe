package io.sparkps.ml.tracking;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * The calls of MLflow's tracking REST API (version 2.0) that a SparkPS run makes: find or create an
 * experiment, create a run, log batches of metrics, params and tags, and end the run. MLflow's own
 * Java client is not on Maven Central in a version this build can take, so these few calls are
 * written here, and tested against a real {@code mlflow server}.
 *
 * <p>Credentials are taken as MLflow's clients take them, from the environment: {@code
 * MLFLOW_TRACKING_TOKEN} (a bearer token), else {@code MLFLOW_TRACKING_USERNAME} and {@code
 * MLFLOW_TRACKING_PASSWORD} (basic authentication). They go into request headers only: no message
 * or log line names them. A call that fails for a reason that may pass (the server unreachable, 429,
 * 5xx) is tried again, {@link #ATTEMPTS} times in all, waiting longer each time; one the server
 * refuses (another 4xx) fails at once with its message.
 */
final class MlflowRest {
  /** Tries of a call that fails for a reason that may pass. */
  static final int ATTEMPTS = 4;
  private static final ObjectMapper JSON = new ObjectMapper();
  private final URI base;
  private final String authorization;
  private final HttpClient http;
  private final Duration timeout;
  private final long firstBackoffMillis;

  /** A failed call: {@code code} is MLflow's error code, or the HTTP status, or "UNREACHABLE". */
  static final class MlflowException extends IOException {
    private static final long serialVersionUID = 1L;
    final String code;
    final boolean transientFailure;

    MlflowException(String message, String code, boolean transientFailure, Throwable cause) {
      super(message, cause);
      this.code = code;
      this.transientFailure = transientFailure;
    }
  }

  /** One value of a metric at a step. */
  record Metric(String key, double value, long timestampMillis, long step) {}

  /** A client of the tracking server at {@code uri} ({@code http(s)://host:port[/prefix]}). */
  MlflowRest(String uri, Map<String, String> env, Duration timeout, long firstBackoffMillis) {
    String u = uri.endsWith("/") ? uri.substring(0, uri.length() - 1) : uri;
    this.base = URI.create(u);
    if (base.getScheme() == null || !(base.getScheme().equals("http") || base.getScheme().equals("https"))) {
      throw new IllegalArgumentException("MLflow tracking URI '" + uri + "' is not http(s)://host:port: SparkPS "
          + "logs to a tracking server (start one with 'mlflow server', or use your platform's)");
    }
    this.authorization = authorization(env);
    this.timeout = timeout;
    this.firstBackoffMillis = firstBackoffMillis;
    this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
  }

  private static String authorization(Map<String, String> env) {
    String token = env.get("MLFLOW_TRACKING_TOKEN");
    if (token != null && !token.isEmpty()) {
      return "Bearer " + token;
    }
    String user = env.get("MLFLOW_TRACKING_USERNAME");
    String password = env.get("MLFLOW_TRACKING_PASSWORD");
    if (user != null && !user.isEmpty()) {
      String pair = user + ":" + (password == null ? "" : password);
      return "Basic " + Base64.getEncoder().encodeToString(pair.getBytes(StandardCharsets.UTF_8));
    }
    return null;
  }

  /** The server this client calls. */
  String uri() {
    return base.toString();
  }

  /** The id of experiment {@code name}, created when there is none. */
  String experimentId(String name) throws IOException, InterruptedException {
    try {
      JsonNode found = call("GET", "experiments/get-by-name?experiment_name="
          + URLEncoder.encode(name, StandardCharsets.UTF_8), null);
      return found.path("experiment").path("experiment_id").asText();
    } catch (MlflowException e) {
      if (!"RESOURCE_DOES_NOT_EXIST".equals(e.code)) {
        throw e;
      }
    }
    try {
      return call("POST", "experiments/create", Map.of("name", name)).path("experiment_id").asText();
    } catch (MlflowException e) {
      if (!"RESOURCE_ALREADY_EXISTS".equals(e.code)) {
        throw e;
      }
      // another run created it meanwhile
      return call("GET", "experiments/get-by-name?experiment_name=" + URLEncoder.encode(name, StandardCharsets.UTF_8),
          null).path("experiment").path("experiment_id").asText();
    }
  }

  /**
   * A run: its id, where its artifacts go ({@code mlflow-artifacts:/...} when the server keeps them)
   * and the params it holds.
   */
  record Run(String id, String artifactUri, Map<String, String> params) {}

  /** Run {@code runId}, which exists (say Python's active run). */
  Run getRun(String runId) throws IOException, InterruptedException {
    JsonNode run = call("GET", "runs/get?run_id=" + URLEncoder.encode(runId, StandardCharsets.UTF_8), null)
        .path("run");
    Map<String, String> params = new LinkedHashMap<>();
    run.path("data").path("params").forEach(p -> params.put(p.path("key").asText(), p.path("value").asText()));
    return new Run(run.path("info").path("run_id").asText(runId), run.path("info").path("artifact_uri").asText(""),
        params);
  }

  /** Creates a run in experiment {@code experimentId}. */
  Run createRun(String experimentId, String runName, long startMillis, Map<String, String> tags)
      throws IOException, InterruptedException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("experiment_id", experimentId);
    if (runName != null && !runName.isEmpty()) {
      body.put("run_name", runName);
    }
    body.put("start_time", startMillis);
    body.put("tags", keyValues(tags));
    JsonNode info = call("POST", "runs/create", body).path("run").path("info");
    return new Run(info.path("run_id").asText(), info.path("artifact_uri").asText(""), Map.of());
  }

  /**
   * Uploads {@code content} as the artifact {@code path} of a run whose artifacts the tracking server
   * keeps ({@code mlflow-artifacts:/...}, the default of {@code mlflow server}), through the server.
   */
  void putArtifact(String artifactUri, String path, byte[] content) throws IOException, InterruptedException {
    URI target = artifactTarget(artifactUri, path);
    retried(() -> send(HttpRequest.newBuilder(target).PUT(HttpRequest.BodyPublishers.ofByteArray(content)),
        "artifact " + path, timeout));
  }

  /** Something that opens the same bytes again for each try of an upload. */
  interface Source {
    java.io.InputStream open() throws IOException;
  }

  /**
   * Uploads the {@code length} bytes {@code source} opens as the artifact {@code path}, streamed (a
   * model's files may be larger than the heap); each try may take the call's timeout plus a second
   * for every 8 MiB.
   */
  void putArtifact(String artifactUri, String path, Source source, long length) throws IOException,
      InterruptedException {
    if (length == 0) {
      putArtifact(artifactUri, path, new byte[0]); // (a streamed body must have bytes: Spark's _SUCCESS has none)
      return;
    }
    URI target = artifactTarget(artifactUri, path);
    Duration limit = timeout.plusSeconds(length / (8L << 20));
    retried(() -> send(HttpRequest.newBuilder(target).PUT(HttpRequest.BodyPublishers.fromPublisher(
        HttpRequest.BodyPublishers.ofInputStream(() -> {
          try {
            return source.open();
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        }), length)), "artifact " + path, limit));
  }

  private URI artifactTarget(String artifactUri, String path) throws MlflowException {
    String prefix = "mlflow-artifacts:";
    if (!artifactUri.startsWith(prefix)) {
      throw new MlflowException("run artifacts at '" + artifactUri + "' are not kept by the tracking server "
          + "(mlflow-artifacts:); SparkPS uploads artifacts through the server only", "UNSUPPORTED", false, null);
    }
    String where = artifactUri.substring(prefix.length()).replaceAll("^/+", "");
    StringBuilder encoded = new StringBuilder();
    for (String segment : path.split("/")) {
      encoded.append('/').append(URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20"));
    }
    return URI.create(base + "/api/2.0/mlflow-artifacts/artifacts/" + where + encoded);
  }

  /**
   * Records an MLflow model logged under the run's artifacts ({@code model} is its {@code MLmodel} as
   * JSON), as MLflow's clients do after uploading one: the run then lists it as its model.
   */
  void logModel(String runId, String modelJson) throws IOException, InterruptedException {
    call("POST", "runs/log-model", Map.of("run_id", runId, "model_json", modelJson));
  }

  /** Logs one batch (within MLflow's limits: 1,000 metrics, 100 params, 100 tags, 1,000 in all). */
  void logBatch(String runId, List<Metric> metrics, Map<String, String> params, Map<String, String> tags)
      throws IOException, InterruptedException {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("run_id", runId);
    List<Map<String, Object>> ms = new ArrayList<>(metrics.size());
    for (Metric m : metrics) {
      Map<String, Object> one = new LinkedHashMap<>();
      one.put("key", m.key());
      // MLflow stores non-finite values; JSON has no literal for them, its clients send these strings.
      one.put("value", Double.isFinite(m.value()) ? (Object) m.value() : Double.isNaN(m.value()) ? "NaN"
          : m.value() > 0 ? "Infinity" : "-Infinity");
      one.put("timestamp", m.timestampMillis());
      one.put("step", m.step());
      ms.add(one);
    }
    body.put("metrics", ms);
    body.put("params", keyValues(params));
    body.put("tags", keyValues(tags));
    call("POST", "runs/log-batch", body);
  }

  /** Ends run {@code runId} with {@code status} (FINISHED, FAILED or KILLED). */
  void endRun(String runId, String status, long endMillis) throws IOException, InterruptedException {
    call("POST", "runs/update", Map.of("run_id", runId, "status", status, "end_time", endMillis));
  }

  private static List<Map<String, String>> keyValues(Map<String, String> values) {
    List<Map<String, String>> out = new ArrayList<>(values.size());
    values.forEach((k, v) -> out.add(Map.of("key", k, "value", v)));
    return out;
  }

  /** One call of the tracking API, tried again while it fails for a reason that may pass. */
  JsonNode call(String method, String path, Object body) throws IOException, InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/api/2.0/mlflow/" + path));
    if (body == null) {
      request.GET();
    } else {
      request.header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    }
    return retried(() -> send(request, path.replaceAll("\\?.*", ""), timeout));
  }

  private interface Attempt {
    JsonNode run() throws IOException, InterruptedException;
  }

  /** Runs {@code attempt} again, waiting longer each time, while it fails for a reason that may pass. */
  private JsonNode retried(Attempt attempt) throws IOException, InterruptedException {
    long backoff = firstBackoffMillis;
    for (int tries = 1; ; tries++) {
      try {
        return attempt.run();
      } catch (MlflowException e) {
        if (!e.transientFailure || tries == ATTEMPTS) {
          throw e;
        }
        Thread.sleep(backoff);
        backoff *= 2;
      }
    }
  }

  /** Sends one request ({@code what} names it in errors); its JSON answer, or the server's refusal. */
  private JsonNode send(HttpRequest.Builder request, String what, Duration limit) throws IOException,
      InterruptedException {
    request.timeout(limit);
    if (authorization != null) {
      request.setHeader("Authorization", authorization);
    }
    HttpResponse<String> response;
    try {
      response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new MlflowException("MLflow tracking server " + base + " did not answer " + what + ": " + e,
          "UNREACHABLE", true, e);
    }
    int status = response.statusCode();
    JsonNode json = response.body().isEmpty() ? JSON.createObjectNode() : parse(response.body());
    if (status / 100 == 2) {
      return json;
    }
    String code = json.path("error_code").asText(String.valueOf(status));
    String message = json.path("message").asText(response.body().length() > 300
        ? response.body().substring(0, 300) : response.body());
    throw new MlflowException("MLflow tracking server " + base + " refused " + what + " (" + status + " " + code
        + "): " + message, code, status == 429 || status / 100 == 5, null);
  }

  private static JsonNode parse(String body) {
    try {
      return JSON.readTree(body);
    } catch (IOException e) {
      return JSON.createObjectNode();
    }
  }
}
