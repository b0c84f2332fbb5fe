package io.sparkps.notebook;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.api.python.Py4JServer;
import org.apache.spark.sql.SparkSession;

/**
 * A note's {@code %pyspark} paragraphs, run as Zeppelin's PySpark interpreter runs them: one Python
 * process ({@code zeppelin_pyspark.py}) joined to this JVM's Spark through Spark's own Py4J server,
 * with {@code sc} and {@code spark} bound to the SparkContext and SparkSession the {@code %spark}
 * paragraphs use, so the views and tables one language makes, the other reads. The Python is
 * {@code sparkps.python} (default python3, with the PySpark of this build's Spark); the
 * {@code sparkps} package comes from {@code sparkps.pythonPath}.
 */
final class PySparkParagraphs implements AutoCloseable {
  /** Longest a paragraph may run (a fit of the notes' sizes takes a minute). */
  static final Duration PARAGRAPH_TIMEOUT = Duration.ofMinutes(15);
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Py4JServer server;
  private final Process python;
  private final Writer toPython;
  private final BufferedReader fromPython;
  private final ExecutorService reader = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "zeppelin-pyspark-replies");
    t.setDaemon(true);
    return t;
  });
  private final Path script;

  /** What a paragraph printed, and whether it ended without an exception (else its traceback is in the output). */
  record Result(boolean ok, String output) {}

  private PySparkParagraphs(Py4JServer server, Process python, Path script) {
    this.server = server;
    this.python = python;
    this.script = script;
    this.toPython = new OutputStreamWriter(python.getOutputStream(), StandardCharsets.UTF_8);
    this.fromPython = new BufferedReader(new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8));
  }

  /** Starts the Python side, joined to {@code spark}. */
  static PySparkParagraphs start(SparkSession spark) throws IOException {
    Py4JServer server = new Py4JServer(spark.sparkContext().conf());
    server.start();
    Path script = Files.createTempFile("zeppelin_pyspark", ".py");
    try (InputStream in = PySparkParagraphs.class.getResourceAsStream("zeppelin_pyspark.py")) {
      Files.copy(in, script, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
    String executable = System.getProperty("sparkps.python", "python3");
    ProcessBuilder builder = new ProcessBuilder(executable, "-u", script.toString());
    Map<String, String> env = builder.environment();
    env.put("PYSPARK_GATEWAY_PORT", Integer.toString(server.getListeningPort()));
    env.put("PYSPARK_GATEWAY_SECRET", server.secret());
    env.put("PYSPARK_PYTHON", executable);
    String packages = System.getProperty("sparkps.pythonPath");
    if (packages != null) {
      env.merge("PYTHONPATH", packages, (before, ours) -> ours + java.io.File.pathSeparator + before);
    }
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    try {
      return new PySparkParagraphs(server, builder.start(), script);
    } catch (IOException e) {
      server.shutdown();
      throw new IOException("cannot start the %pyspark paragraphs' Python '" + executable
          + "' (set -Dpython to a python with the pinned PySpark): " + e.getMessage(), e);
    }
  }

  /** Runs one paragraph; waits at most {@link #PARAGRAPH_TIMEOUT} for the Python process to answer. */
  Result run(String code) throws IOException, InterruptedException {
    toPython.write(JSON.writeValueAsString(Map.of("code", code)) + "\n");
    toPython.flush();
    Future<String> reply = reader.submit(fromPython::readLine);
    String line;
    try {
      line = reply.get(PARAGRAPH_TIMEOUT.toMinutes(), TimeUnit.MINUTES);
    } catch (TimeoutException e) {
      reply.cancel(true);
      throw new IllegalStateException("the %pyspark paragraph did not finish within " + PARAGRAPH_TIMEOUT.toMinutes()
          + " min (its Python process, pid " + python.pid() + ", is killed)");
    } catch (ExecutionException e) {
      throw new IOException("reading the %pyspark paragraph's reply: " + e.getCause(), e.getCause());
    }
    if (line == null) {
      throw new IllegalStateException("the %pyspark paragraphs' Python process ended (exit code "
          + python.waitFor() + "; its error output is above) before answering");
    }
    JsonNode json = JSON.readTree(line);
    return new Result("ok".equals(json.path("status").asText()), json.path("output").asText());
  }

  /** Ends the Python process (its input closed; killed after 30 s) and the Py4J server. */
  @Override
  public void close() throws IOException, InterruptedException {
    try {
      toPython.close();
      if (!python.waitFor(30, TimeUnit.SECONDS)) {
        python.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } finally {
      reader.shutdownNow();
      server.shutdown();
      Files.deleteIfExists(script);
    }
  }
}
