package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;

/** Runs that cannot start fail with the reason, in bounded time, leaving nothing running. */
class StartupFailureTest {
  @Test
  void dynamicAllocation_failsBeforeLaunch_namingTheSetting() throws InterruptedException {
    JavaSparkContext sc = new JavaSparkContext(SparkTestSupport.conf("local[4]")
        .set("spark.dynamicAllocation.enabled", "true"));
    List<String> jobs = java.util.Collections.synchronizedList(new ArrayList<>());
    sc.sc().addSparkListener(new org.apache.spark.scheduler.SparkListener() {
      @Override
      public void onJobStart(org.apache.spark.scheduler.SparkListenerJobStart start) {
        jobs.add(String.valueOf(start.properties().getProperty("spark.job.description")));
      }
    });
    try {
      ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build();
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> new TrainingCluster(sc, spec).runAsync(sc.parallelize(List.of(1, 2)), ctx -> 1));
      assertTrue(e.getMessage().contains("spark.dynamicAllocation.enabled=false"), e.getMessage());
      assertEquals(List.of("control"), jobsThenControl(sc, jobs), "nothing was launched before the control job");
    } finally {
      sc.stop();
    }
  }

  @Test
  void psThatNeverStarts_failsAfterThePsStartTimeout_namingTheMissingPs() throws Exception {
    JavaSparkContext sc = new JavaSparkContext(SparkTestSupport.conf("local[4]")
        .set("spark.plugins", SlowPsStart.class.getName()));
    try {
      ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(2)
          .optPsStartTimeout(Duration.ofSeconds(3)).optHeartbeatInterval(Duration.ofMillis(100)).build();
      long t0 = System.nanoTime();
      TrainingFailure e = assertThrows(TrainingFailure.class,
          () -> new TrainingCluster(sc, spec).run(sc.parallelize(List.of(1, 2)), ctx -> 1));
      long seconds = (System.nanoTime() - t0) / 1_000_000_000L;
      assertTrue(seconds < 30, "bounded: " + seconds + " s");
      assertEquals(Role.PS, e.role());
      assertTrue(e.getMessage().startsWith("ps [0] did not register within 3000 ms"), e.getMessage());
      assertTrue(e.getMessage().contains("'sparkps ps N'"), e.getMessage());
      awaitNoActiveJobs(sc);
    } finally {
      sc.stop();
    }
  }

  /**
   * The jobs {@code jobs} saw start, once a last job named "control" has been seen too: the
   * listener bus delivers in order, so any job started before it is in the list by then.
   */
  private static List<String> jobsThenControl(JavaSparkContext sc, List<String> jobs) throws InterruptedException {
    sc.setJobDescription("control");
    sc.parallelize(List.of(1)).count();
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (!jobs.contains("control") && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    synchronized (jobs) {
      return List.copyOf(jobs);
    }
  }

  private static void awaitNoActiveJobs(JavaSparkContext sc) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    List<Integer> active = new ArrayList<>();
    do {
      active.clear();
      for (int id : sc.statusTracker().getActiveJobIds()) {
        active.add(id);
      }
      Thread.sleep(50);
    } while (!active.isEmpty() && System.nanoTime() < deadline);
    assertEquals(List.of(), active, "the ps job was cancelled");
  }
}
