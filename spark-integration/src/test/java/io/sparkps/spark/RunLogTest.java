package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The driver's log tells the story of a run at INFO, through SLF4J: its launch, each ps serving,
 * each role registering, a failure reported, and its end with everything stopped.
 */
class RunLogTest {
  private static JavaSparkContext sc;
  private static final List<String> LINES = new ArrayList<>();
  private static AbstractAppender appender;

  @BeforeAll
  static void start() {
    sc = SparkTestSupport.local(4);
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    Configuration config = context.getConfiguration();
    appender = new AbstractAppender("run-log-test", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent event) {
        synchronized (LINES) {
          LINES.add(event.getLevel() + " " + event.getMessage().getFormattedMessage());
        }
      }
    };
    appender.start();
    LoggerConfig sparkps = new LoggerConfig("io.sparkps", Level.INFO, true);
    sparkps.addAppender(appender, Level.INFO, null);
    config.addLogger("io.sparkps", sparkps);
    context.updateLoggers();
  }

  @AfterAll
  static void stop() {
    LoggerContext context = (LoggerContext) LogManager.getContext(false);
    context.getConfiguration().removeLogger("io.sparkps");
    context.updateLoggers();
    appender.stop();
    sc.stop();
  }

  private static List<String> lines() {
    synchronized (LINES) {
      List<String> copy = List.copyOf(LINES);
      LINES.clear();
      return copy;
    }
  }

  private static int indexOf(List<String> lines, String regex) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).matches(regex)) {
        return i;
      }
    }
    throw new AssertionError("no log line matches " + regex + " in:\n" + String.join("\n", lines));
  }

  @Test
  void aRun_logsItsLaunchServersRolesAndEnd_inOrder() throws Exception {
    lines();
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(100))
        .build();
    TrainingJob<Float> job = new TrainingCluster(sc, spec).runAsync(
        sc.parallelize(IntStream.range(0, 10).boxed().toList(), 2), TrainingClusterTest::seedWorker);
    job.get(Duration.ofMinutes(2));
    List<String> lines = lines();
    String run = "SparkPS run " + job.runId() + ": ";
    int launch = indexOf(lines, "INFO " + run + "launching 1 ps, 2 workers on local\\[4\\] \\(coordinator at \\S+, TLS off\\)");
    int ps = indexOf(lines, "INFO SparkPS: ps 0 serves at \\S+ \\(executor driver, task attempt 0, 1 core\\)");
    int serving = indexOf(lines, "INFO " + run + "every ps serves \\(\\[\\S+\\]\\) after \\d+ ms");
    int chief = indexOf(lines, "INFO SparkPS: chief 0 registered on \\S+ \\(executor driver, stage attempt 0, 1 core\\)");
    int worker = indexOf(lines, "INFO SparkPS: worker 1 registered on \\S+ \\(executor driver, stage attempt 0, 1 core\\)");
    int end = indexOf(lines, "INFO " + run + "SUCCEEDED in \\d+ ms; everything it started is stopped");
    assertTrue(launch < ps && ps < serving && serving < chief && serving < worker && chief < end && worker < end,
        String.join("\n", lines));
  }

  @Test
  void aFailedRun_logsTheFailureAndItsEnd() {
    lines();
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(100))
        .build();
    TrainingJob<Integer> job = new TrainingCluster(sc, spec).runAsync(
        sc.parallelize(IntStream.range(0, 10).boxed().toList(), 2), ctx -> {
          if (ctx.index() == 1) {
            throw new IllegalStateException("worker one gives up");
          }
          return 1;
        });
    org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> job.get(Duration.ofMinutes(2)));
    List<String> lines = lines();
    int failed = indexOf(lines, "INFO SparkPS: worker 1 on \\S+ \\(attempt 0\\) failed: .*worker one gives up.*");
    int end = indexOf(lines, "INFO SparkPS run " + job.runId() + ": FAILED after \\d+ ms \\(.*worker one gives up.*\\); "
        + "everything it started is stopped");
    assertTrue(failed < end, String.join("\n", lines));
  }
}
