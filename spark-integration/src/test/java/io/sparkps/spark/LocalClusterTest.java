package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seed example with every role in executor JVMs of their own: Spark's {@code local-cluster}
 * master, with a SPARK_HOME whose {@code jars/} folder this test builds from its own class path.
 */
class LocalClusterTest {
  @TempDir
  static Path home;
  private static JavaSparkContext sc;

  @BeforeAll
  static void start() throws IOException {
    List<String> directories = sparkHomeFromClassPath(home);
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", home.toString());
    sc = new JavaSparkContext(SparkTestSupport.conf("local-cluster[2,2,1024]")
        .set("spark.executor.extraClassPath", String.join(File.pathSeparator, directories))
        .set("spark.executor.extraJavaOptions", moduleOptions())
        .set("spark.task.maxFailures", "4"));
  }

  @AfterAll
  static void stop() {
    if (sc != null) {
      sc.stop();
    }
    System.clearProperty("spark.testing");
    System.clearProperty("spark.test.home");
  }

  /** This JVM's --add-opens list (Spark's, from the build), for the executor JVMs. */
  private static String moduleOptions() {
    return java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(a -> a.startsWith("--add-opens") || a.startsWith("-Djdk.reflect")).collect(Collectors.joining(" "));
  }

  /** Links every jar of the class path into {@code home/jars}; returns the class path's directories. */
  static List<String> sparkHomeFromClassPath(Path home) throws IOException {
    Path jars = Files.createDirectories(home.resolve("jars"));
    Files.createDirectories(home.resolve("launcher/target/scala-2.12"));
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

  @Test
  void seedExample_inSeparateExecutorJvms_endsAtTen() throws Exception {
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optEvaluator(true)
        .optHeartbeatInterval(Duration.ofMillis(100)).build();
    RunResult<Float> result = new TrainingCluster(sc, spec).withEvaluator(TrainingClusterTest::pollingEvaluator)
        .run(sc.parallelize(IntStream.range(0, 8).boxed().toList(), 2), TrainingClusterTest::seedWorker);
    assertEquals(List.of(10f, 10f), result.results());
    List<Long> versions = result.evaluatorHistory().stream().map(TaskProgress::step).toList();
    assertEquals(10L, versions.get(versions.size() - 1), "evaluator versions: " + versions);
    Set<String> executors = result.workerHistory().stream().map(TaskProgress::executor).collect(Collectors.toSet());
    assertTrue(!executors.contains("driver") && !executors.isEmpty(), "workers ran in executor JVMs: " + executors);
  }
}
