package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
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
    sc = LocalClusters.start(home, 2, 2, 1024, LocalClusters.conf());
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
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
