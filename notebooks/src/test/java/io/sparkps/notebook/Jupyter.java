package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Real Jupyter for the integration tests: the kernel installed by its own installer (as a user
 * would, in a JVM of its own) into {@code target/jupyter}, and Debian's {@code jupyter} and
 * {@code python3} run against it. Every child process is time-boxed.
 */
final class Jupyter {
  static final Path JUPYTER = Path.of("/usr/bin/jupyter");
  static final Path PYTHON = Path.of("/usr/bin/python3");
  static final Path TARGET = Path.of("target").toAbsolutePath();
  static final Path PREFIX = TARGET.resolve("jupyter");

  private Jupyter() {}

  /** A process's exit code and what it printed (stdout and stderr together). */
  record Run(int exitCode, String output) {}

  /** Installs the kernelspec under {@link #PREFIX} with the build's Spark; returns its folder. */
  static synchronized Path installKernel() throws Exception {
    Path spec = PREFIX.resolve("share/jupyter/kernels/sparkps");
    if (Files.exists(spec.resolve("kernel.json"))) {
      return spec;
    }
    requireJupyter();
    String jar = System.getProperty("sparkps.kernelJar");
    assertTrue(jar != null && Files.exists(Path.of(jar)), "the kernel jar (mvn package) is missing: " + jar);
    String cp = jar + File.pathSeparator + TARGET.resolve("kernel-lib") + File.separator + "*";
    Run run = run(List.of(java(), "-cp", cp, KernelInstall.class.getName(), "--prefix", PREFIX.toString(),
        "--spark-jars", TARGET.resolve("spark-jars").toString(),
        "--env", "SPARK_LOCAL_IP=127.0.0.1"), Map.of(), 120);
    assertEquals(0, run.exitCode(), "the kernel installer failed:\n" + run.output());
    assertTrue(run.output().contains("Installed the kernel 'Java (SparkPS)' (sparkps) in " + spec), run.output());
    return spec;
  }

  /** The environment under which Jupyter finds the installed kernel. */
  static Map<String, String> env() {
    return Map.of("JUPYTER_PATH", PREFIX.resolve("share/jupyter").toString(), "PYDEVD_DISABLE_FILE_VALIDATION", "1");
  }

  /** Fails with the fix when Debian's Jupyter packages are not installed. */
  static void requireJupyter() {
    if (!Files.isExecutable(JUPYTER) || !Files.isExecutable(PYTHON)) {
      fail("Jupyter is not installed: apt-get install jupyter-nbconvert jupyter-client python3-nbclient "
          + "python3-jupyter-kernel-test (.ci/run does)");
    }
  }

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** Runs {@code command}, at most {@code seconds}; a process still running then is killed and the test fails. */
  static Run run(List<String> command, Map<String, String> env, long seconds) throws IOException, InterruptedException {
    Path log = Files.createTempFile(TARGET, "process-", ".log");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(env);
    Process p = pb.start();
    if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      fail("gave up after " + seconds + " s waiting for " + String.join(" ", command) + "; its output:\n" + tail(log));
    }
    return new Run(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
  }

  /** The last 60 lines of a log. */
  static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return String.join("\n", new ArrayList<>(lines.subList(Math.max(0, lines.size() - 60), lines.size())));
  }
}
