package io.sparkps.ml.tracking;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * A real {@code mlflow server} for the tracking tests (a SQLite store and a local artifact root below
 * {@code dir}), started from the Python that {@code -Dsparkps.mlflow.python} names (the requirements'
 * mlflow pins; .ci/run passes its venv's), and read back with MLflow's own Python client.
 */
public final class MlflowServer implements AutoCloseable {
  /** The system property naming the Python with MLflow. */
  public static final String PYTHON = "sparkps.mlflow.python";
  private final Process process;
  private final Path log;
  private final String uri;

  private MlflowServer(Process process, Path log, String uri) {
    this.process = process;
    this.log = log;
    this.uri = uri;
  }

  private static MlflowServer shared;

  /**
   * The server the tracking tests of this JVM share (each test names its own experiment or run): started
   * on first use, with its store in a temporary directory, and stopped when the JVM exits.
   */
  public static synchronized MlflowServer shared() throws IOException, InterruptedException {
    if (shared == null || !shared.process.isAlive()) {
      Path dir = Files.createTempDirectory("sparkps-mlflow");
      shared = start(dir);
      MlflowServer started = shared;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        started.close();
        try (var files = Files.walk(dir)) {
          files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException ignored) {
          // a temporary directory
        }
      }));
    }
    return shared;
  }

  /** Starts a server with its store below {@code dir}; waits at most 300 s for it to answer. */
  public static MlflowServer start(Path dir) throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Path log = dir.resolve("mlflow-server.log");
    Process p = new ProcessBuilder(python(), "-m", "mlflow", "server", "--backend-store-uri",
        "sqlite:///" + dir.resolve("mlflow.db").toAbsolutePath(), "--artifacts-destination",
        dir.resolve("artifacts").toAbsolutePath().toString(), "--host", "127.0.0.1", "--port", Integer.toString(port),
        "--workers", "1").redirectErrorStream(true).redirectOutput(log.toFile()).start();
    MlflowServer server = new MlflowServer(p, log, "http://127.0.0.1:" + port);
    long deadline = System.nanoTime() + 300_000_000_000L;
    while (!server.healthy()) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        server.close();
        throw new IllegalStateException("the mlflow server (" + python() + " -m mlflow server, port " + port + ") "
            + (p.isAlive() ? "did not answer /health within 300 s" : "exited") + "; its log:\n" + server.logTail());
      }
      Thread.sleep(250);
    }
    return server;
  }

  static String python() {
    String python = System.getProperty(PYTHON, "");
    if (python.isEmpty()) {
      throw new IllegalStateException("set -D" + PYTHON + " (Maven: -Dpython.mlflow) to a Python with the "
          + "requirements' mlflow pins");
    }
    return python;
  }

  private boolean healthy() {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create(uri + "/health").toURL().openConnection();
      c.setConnectTimeout(1000);
      c.setReadTimeout(1000);
      return c.getResponseCode() == 200;
    } catch (IOException e) {
      return false;
    }
  }

  /** The tracking URI. */
  public String uri() {
    return uri;
  }

  String logTail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  /**
   * Run {@code runId} (or {@code name:NAME}) as MLflow's Python client reads it: run_id, status, run_name,
   * experiment, params, tags, artifacts (the text of the JSON and HTML ones) and for each of {@code
   * metrics} its history as [step, value] pairs.
   */
  public JsonNode read(String runId, String... metrics) throws IOException, InterruptedException {
    List<String> args = new java.util.ArrayList<>(List.of(uri, runId));
    args.addAll(List.of(metrics));
    return runJson("/mlflow_read_run.py", args);
  }

  /**
   * Run {@code runDir}'s TensorBoard scalars as TensorBoard's own reader gives them (the same
   * Python, which holds the requirements' tensorboard line): tag to [[step, value, wall_time]].
   */
  public static JsonNode tensorBoardScalars(Path runDir) throws IOException, InterruptedException {
    return runJson("/tensorboard_read.py", List.of(runDir.toString()));
  }

  /**
   * Run {@code runDir}'s TensorBoard histograms as TensorBoard's own reader gives them: tag to
   * [[step, min, max, num, sum, sum_squares, [bucket limits], [bucket counts]]].
   */
  public static JsonNode tensorBoardHistograms(Path runDir) throws IOException, InterruptedException {
    return runJson("/tensorboard_read.py", List.of(runDir.toString(), "histograms"));
  }

  /** Runs the test resource {@code script} with {@code args} in the tests' Python; the JSON it prints. */
  private static JsonNode runJson(String script, List<String> args) throws IOException, InterruptedException {
    Path file = Files.createTempFile("sparkps-read", ".py");
    try {
      try (var in = MlflowServer.class.getResourceAsStream(script)) {
        Files.copy(in, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      List<String> command = new java.util.ArrayList<>(List.of(python(), file.toString()));
      command.addAll(args);
      ProcessBuilder pb = new ProcessBuilder(command);
      pb.environment().putAll(Map.of("PYTHONDONTWRITEBYTECODE", "1"));
      Process p = pb.start();
      byte[] out = p.getInputStream().readAllBytes();
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IllegalStateException(script + " " + args + " failed: " + err);
      }
      return new ObjectMapper().readTree(out);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  @Override
  public void close() {
    process.descendants().forEach(ProcessHandle::destroy);
    process.destroy();
    try {
      if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
