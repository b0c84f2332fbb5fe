package io.sparkps.ps.example;

import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The final example of the Distributed TensorFlow tutorial, as separate processes: one ps and two
 * workers; worker 0 (the chief) creates and initializes a scalar, worker 1 waits for that, and
 * each adds 1.0 five times. The ps ends up holding exactly 10.0.
 *
 * <pre>
 * SPARKPS_TOKEN=secret java -cp CP io.sparkps.ps.example.SeedExample ps --port 2222
 * SPARKPS_TOKEN=secret java -cp CP io.sparkps.ps.example.SeedExample worker --index 0 --ps localhost:2222
 * SPARKPS_TOKEN=secret java -cp CP io.sparkps.ps.example.SeedExample worker --index 1 --ps localhost:2222
 * SPARKPS_TOKEN=secret java -cp CP io.sparkps.ps.example.SeedExample stop --ps localhost:2222
 * java -cp CP io.sparkps.ps.example.SeedExample local     (all of the above)
 * </pre>
 *
 * The token travels in the environment ({@value #TOKEN_ENV}), never on a command line.
 */
public final class SeedExample {
  /** The environment variable holding the run's token. */
  public static final String TOKEN_ENV = "SPARKPS_TOKEN";
  /** The line a ps prints once it serves, followed by its address. */
  public static final String READY = "SPARKPS_PS_READY ";
  static final String VARIABLE = "counter";
  static final int ADDS = 5;
  private static final Duration WAIT = Duration.ofSeconds(60);

  private SeedExample() {}

  /** Runs one role; exits 0 on success, 1 on failure, 2 on bad arguments. */
  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (IllegalArgumentException e) {
      System.err.println("seed example: " + e.getMessage());
      System.err.println("usage: SeedExample ps [--port N] | worker --index I --ps HOST:PORT | stop --ps HOST:PORT | local");
      code = 2;
    } catch (Exception e) {
      System.err.println("seed example failed: " + e);
      e.printStackTrace();
      code = 1;
    }
    System.exit(code);
  }

  static int run(String[] args) throws Exception {
    if (args.length == 0) {
      throw new IllegalArgumentException("missing role");
    }
    return switch (args[0]) {
      case "ps" -> runPs(Integer.parseInt(option(args, "--port", "0")));
      case "worker" -> runWorker(Integer.parseInt(option(args, "--index", null)), option(args, "--ps", null));
      case "local" -> runLocal();
      case "stop" -> runStop(option(args, "--ps", null));
      default -> throw new IllegalArgumentException("unknown role '" + args[0] + "'");
    };
  }

  private static String option(String[] args, String name, String fallback) {
    for (int i = 1; i < args.length - 1; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    if (fallback == null) {
      throw new IllegalArgumentException("missing " + name);
    }
    return fallback;
  }

  private static PsToken token() {
    String secret = System.getenv(TOKEN_ENV);
    if (secret == null || secret.isBlank()) {
      throw new IllegalArgumentException("set " + TOKEN_ENV + " to the run's secret in the environment");
    }
    return PsToken.of(secret);
  }

  private static int runPs(int port) throws InterruptedException {
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token()).optPort(port).build().start()) {
      System.out.println(READY + ps.address());
      System.out.flush();
      ps.awaitTermination(Duration.ofDays(365));
    }
    return 0;
  }

  private static int runWorker(int index, String ps) {
    try (PsClient client = PsClient.builder().setShards(List.of(ps)).setToken(token()).optWorker(index).build()) {
      client.create(VariableSpec.of(VARIABLE));
      if (index == 0) {
        client.initializeAll();
      } else {
        client.awaitInitialized(List.of(VARIABLE), WAIT);
      }
      for (int i = 0; i < ADDS; i++) {
        client.assignAdd(VARIABLE, 1.0);
      }
      System.out.println("worker " + index + " done; " + VARIABLE + " = " + client.pull(VARIABLE).getFloat(0));
    }
    return 0;
  }

  private static int runStop(String ps) {
    try (PsClient client = PsClient.builder().setShards(List.of(ps)).setToken(token()).build()) {
      client.shutdownServers();
    }
    return 0;
  }

  private static int runLocal() throws Exception {
    PsToken token = PsToken.generate();
    List<Process> processes = new ArrayList<>();
    try {
      Process ps = launch(token, "ps", "--port", "0");
      processes.add(ps);
      String address = awaitReady(ps);
      System.out.println("ps serving at " + address);
      for (int i = 0; i < 2; i++) {
        processes.add(launch(token, "worker", "--index", Integer.toString(i), "--ps", address));
      }
      for (int i = 1; i <= 2; i++) {
        Process w = processes.get(i);
        if (!w.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS) || w.exitValue() != 0) {
          throw new IllegalStateException("worker " + (i - 1) + " did not finish cleanly within " + WAIT);
        }
      }
      float value;
      try (PsClient client = PsClient.builder().setShards(List.of(address)).setToken(token).build()) {
        value = client.pull(VARIABLE).getFloat(0);
        client.shutdownServers();
      }
      if (!ps.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS) || ps.exitValue() != 0) {
        throw new IllegalStateException("the ps did not exit cleanly within " + WAIT);
      }
      System.out.println("final value on the ps: " + value + " (expected " + 2.0 * ADDS + ")");
      return value == 2.0f * ADDS ? 0 : 1;
    } finally {
      processes.forEach(Process::destroyForcibly);
    }
  }

  /** Starts this class in a new JVM with the same class path, the token in its environment. */
  public static Process launch(PsToken token, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), SeedExample.class.getName()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    pb.environment().put(TOKEN_ENV, token.secret());
    pb.environment().put("OMP_NUM_THREADS", "1");
    if (!args[0].equals("ps")) {
      pb.redirectOutput(ProcessBuilder.Redirect.INHERIT);
    }
    return pb.start();
  }

  /** Reads a ps process's output until its ready line and returns its address. */
  public static String awaitReady(Process ps) throws IOException {
    BufferedReader out = new BufferedReader(new InputStreamReader(ps.getInputStream(), StandardCharsets.UTF_8));
    for (String line = out.readLine(); line != null; line = out.readLine()) {
      if (line.startsWith(READY)) {
        return line.substring(READY.length()).trim();
      }
    }
    throw new IllegalStateException("the ps process exited (code " + ps.onExit().join().exitValue()
        + ") before it served");
  }
}
