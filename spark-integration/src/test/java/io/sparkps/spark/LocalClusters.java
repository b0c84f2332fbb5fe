package io.sparkps.spark;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * Spark's {@code local-cluster} master for tests: executors in JVMs of their own, with a
 * SPARK_HOME whose {@code jars/} folder is built from the test's class path; and the executors'
 * processes, to kill or stop them as a failing host would.
 */
public final class LocalClusters {
  private LocalClusters() {}

  /**
   * A context on {@code local-cluster[executors,cores,memoryMb]} with the SPARK_HOME built below
   * {@code home}; {@code conf} adds settings. Spark's test mode is on while it runs.
   */
  public static JavaSparkContext start(Path home, int executors, int cores, int memoryMb, SparkConf conf)
      throws IOException {
    List<String> directories = sparkHomeFromClassPath(home);
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", home.toString());
    conf.setMaster("local-cluster[" + executors + "," + cores + "," + memoryMb + "]")
        .set("spark.executor.extraClassPath", String.join(File.pathSeparator, directories))
        .set("spark.executor.extraJavaOptions", moduleOptions())
        .set("spark.executor.memory", memoryMb + "m")
        .set("spark.task.maxFailures", "4");
    JavaSparkContext sc = new JavaSparkContext(conf);
    awaitExecutors(sc, executors, 120);
    return sc;
  }

  /** A base configuration: loopback only, no UI. */
  public static SparkConf conf() {
    return SparkTestSupport.conf("local").setAppName("sparkps-local-cluster-test");
  }

  /** Stops the context and leaves Spark's test mode. */
  public static void stop(JavaSparkContext sc) {
    if (sc != null) {
      sc.stop();
    }
    System.clearProperty("spark.testing");
    System.clearProperty("spark.test.home");
  }

  /** Waits until {@code n} executors are registered (the master replaces one that died). */
  public static void awaitExecutors(JavaSparkContext sc, int n, int seconds) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (sc.sc().statusTracker().getExecutorInfos().length - 1 < n) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException((sc.sc().statusTracker().getExecutorInfos().length - 1) + " of " + n
            + " executors registered within " + seconds + " s");
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for executors", e);
      }
    }
  }

  /** The peak resident set size of a process of this machine so far (Linux's VmHWM), in bytes. */
  public static long peakRss(ProcessHandle process) {
    try {
      return java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/" + process.pid() + "/status")).stream()
          .filter(l -> l.startsWith("VmHWM:")).mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024)
          .findFirst().orElseThrow(() -> new IllegalStateException("no VmHWM for process " + process.pid()));
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot read the status of process " + process.pid(), e);
    }
  }

  /**
   * The process of executor {@code executorId} of this application: named by its driver's port
   * too, since two local clusters started within one second (tests in two JVMs) have the same
   * application id and executor ids.
   */
  public static ProcessHandle executorProcess(JavaSparkContext sc, String executorId) {
    String app = sc.sc().applicationId();
    String driver = ":" + sc.getConf().get("spark.driver.port"); // a port one live driver of this machine holds
    return ProcessHandle.allProcesses().filter(p -> {
      List<String> args = arguments(p);
      int id = args.indexOf("--executor-id");
      int url = args.indexOf("--driver-url");
      return id >= 0 && id + 1 < args.size() && args.get(id + 1).equals(executorId) && args.contains(app)
          && url >= 0 && url + 1 < args.size() && args.get(url + 1).endsWith(driver);
    }).findFirst().orElseThrow(() -> new IllegalStateException("no process of executor " + executorId + " of " + app
        + " (driver " + driver + ")"));
  }

  /** A process's command line (from /proc: Java's ProcessHandle.Info leaves long ones out). */
  private static List<String> arguments(ProcessHandle p) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(p.pid()), "cmdline"));
      return List.of(new String(raw, java.nio.charset.StandardCharsets.UTF_8).split("\0"));
    } catch (IOException | RuntimeException e) {
      return List.of();
    }
  }

  /** Sends {@code signal} (STOP, CONT, KILL) to a process, as {@code kill -SIGNAL pid} does. */
  public static void signal(ProcessHandle process, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
    if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IOException("kill -" + signal + " " + process.pid() + " failed");
    }
  }

  /**
   * Kills {@code process} if it still lives (a stopped executor never comes back on its own): a
   * kill that fails because the process ended meanwhile (the run had its executor killed, as it does
   * a silent one's) is no failure.
   */
  public static void killIfAlive(ProcessHandle process) throws IOException, InterruptedException {
    if (!process.isAlive()) {
      return;
    }
    try {
      signal(process, "KILL");
    } catch (IOException e) {
      if (process.isAlive()) {
        throw e;
      }
    }
  }

  /** This JVM's --add-opens list (Spark's, from the build), for the executor JVMs. */
  private static String moduleOptions() {
    return java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(a -> a.startsWith("--add-opens") || a.startsWith("-Djdk.reflect")).collect(Collectors.joining(" "));
  }

  /** Links every jar of the class path into {@code home/jars}; returns the class path's directories. */
  static List<String> sparkHomeFromClassPath(Path home) throws IOException {
    Path jars = Files.createDirectories(home.resolve("jars"));
    // Spark's launcher, in test mode, takes the Scala version from the folder it finds here.
    String scalaVersion = scala.util.Properties.versionNumberString();
    Files.createDirectories(home.resolve("launcher/target/scala-" + scalaVersion.substring(0, scalaVersion.lastIndexOf('.'))));
    List<String> directories = new ArrayList<>();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      Path p = Path.of(entry).toAbsolutePath();
      if (Files.isDirectory(p)) {
        directories.add(p.toString());
      } else if (entry.endsWith(".jar") && Files.exists(p) && !Files.exists(jars.resolve(p.getFileName()))) {
        Files.createSymbolicLink(jars.resolve(p.getFileName()), p);
      }
    }
    return directories;
  }
}
