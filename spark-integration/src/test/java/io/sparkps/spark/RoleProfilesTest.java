package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.resource.ExecutorResourceRequests;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.ResourceProfileBuilder;
import org.apache.spark.resource.TaskResourceRequest;
import org.apache.spark.resource.TaskResourceRequests;
import org.junit.jupiter.api.Test;

/**
 * Each role's ask and profile from an application's settings: ps and evaluator tasks hold no
 * custom resource, a worker its executor's whole amount; no profile where every ask is the
 * application's; the run goes on without them, or is refused, where Spark cannot give them.
 */
class RoleProfilesTest {
  /** An application's default profile: executors of {@code cores} cores and {@code gpus} GPUs, tasks of 1 core and {@code taskGpus}. */
  private static ResourceProfile defaults(int cores, int gpus, double taskGpus) {
    ExecutorResourceRequests executors = new ExecutorResourceRequests().cores(cores).memory("1g");
    TaskResourceRequests tasks = new TaskResourceRequests().cpus(1);
    if (gpus > 0) {
      executors.resource("gpu", gpus, "", "");
      tasks.resource("gpu", taskGpus);
    }
    return new ResourceProfileBuilder().require(executors).require(tasks).build();
  }

  private static RoleProfiles of(SparkConf conf, ResourceProfile defaults, boolean supported) {
    return RoleProfiles.of(conf, defaults, rp -> supported, "spark://master:7077", "3.5.9");
  }

  private static Map<String, Double> tasks(ResourceProfile p) {
    Map<String, Double> out = new java.util.TreeMap<>();
    for (Map.Entry<String, TaskResourceRequest> e : p.taskResourcesJMap().entrySet()) {
      out.put(e.getKey(), e.getValue().amount());
    }
    return out;
  }

  @Test
  void gpuExecutors_psAndEvaluatorHoldNone_aWorkerItsExecutorsWhole() {
    RoleProfiles p = of(new SparkConf(false), defaults(4, 2, 0.5), true);
    assertEquals(Map.of("cpus", 1.0), tasks(p.profile(Role.PS)));
    assertSame(p.profile(Role.PS), p.profile(Role.EVALUATOR), "one profile for the same ask");
    assertEquals(Map.of("cpus", 1.0, "gpu", 2.0), tasks(p.profile(Role.WORKER)));
    assertSame(p.profile(Role.WORKER), p.profile(Role.CHIEF));
    assertTrue(p.profile(Role.PS).executorResourcesJMap().isEmpty(), "task asks only: the executors stay as they are");
    assertNull(p.note());
    assertEquals("task resources by role: ps: 1 core; worker: 1 core, 2 gpu; evaluator: 1 core", p.describe());
  }

  @Test
  void asksLikeTheApplications_makeNoProfile() {
    RoleProfiles p = of(new SparkConf(false), defaults(4, 0, 0), true);
    for (Role role : Role.values()) {
      assertNull(p.profile(role), role + ": " + p.describe());
    }
    assertNull(p.note());
    // a worker of 2 cores is the one role that differs
    RoleProfiles wide = of(new SparkConf(false).set("spark.sparkps.worker.cpus", "2"), defaults(4, 0, 0), true);
    assertNull(wide.profile(Role.PS));
    assertEquals(Map.of("cpus", 2.0), tasks(wide.profile(Role.WORKER)));
    assertEquals("task resources by role: worker: 2 cores", wide.describe());
  }

  @Test
  void whereSparkCannot_autoGoesOnAndSaysSo_trueRefuses_falseNeverAsks() {
    ResourceProfile gpus = defaults(4, 1, 0.5);
    RoleProfiles auto = of(new SparkConf(false), gpus, false);
    assertNull(auto.profile(Role.PS));
    assertNull(auto.profile(Role.WORKER));
    assertTrue(auto.note().contains("Spark 3.5.9 on master spark://master:7077 cannot give a stage task resources")
        && auto.note().contains("every task asks for 1 core, 0.5 gpu (spark.task.*), not ps: 1 core; worker: 1 core, "
            + "1 gpu; evaluator: 1 core"), auto.note());
    IllegalStateException refused = assertThrows(IllegalStateException.class,
        () -> of(new SparkConf(false).set("spark.sparkps.taskResourceProfiles", "true"), gpus, false));
    assertTrue(refused.getMessage().startsWith("spark.sparkps.taskResourceProfiles is true, but Spark 3.5.9"),
        refused.getMessage());
    RoleProfiles off = of(new SparkConf(false).set("spark.sparkps.taskResourceProfiles", "false"), gpus, true);
    assertNull(off.profile(Role.PS));
    assertTrue(off.note().startsWith("task resource profiles are off (spark.sparkps.taskResourceProfiles=false)"),
        off.note());
  }

  @Test
  void onSpark35_aWorkersWholeGpuBesideFractionalTasks_isAWarning_notOnSpark4_norWithWholeTasks() {
    assertTrue(RoleProfiles.of(new SparkConf(false), defaults(4, 1, 0.5), rp -> true, "yarn", "3.5.9").caveat()
        .startsWith("Spark 3.5.9 counts a task's gpu in parts of spark.task.resource.gpu.amount (0.5), so workers "
            + "asking a whole gpu may share one"));
    assertNull(RoleProfiles.of(new SparkConf(false), defaults(4, 1, 0.5), rp -> true, "yarn", "4.1.0").caveat());
    assertNull(RoleProfiles.of(new SparkConf(false), defaults(4, 1, 1), rp -> true, "yarn", "3.5.9").caveat());
  }

  @Test
  void badSettings_nameTheirKey() {
    for (String[] bad : new String[][] {{"spark.sparkps.ps.cpus", "0"}, {"spark.sparkps.evaluator.cpus", "one"},
        {"spark.sparkps.worker.cpus", "-2"}, {"spark.sparkps.taskResourceProfiles", "sometimes"}}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> of(new SparkConf(false).set(bad[0], bad[1]), defaults(4, 1, 1), true));
      assertTrue(e.getMessage().startsWith(bad[0] + " is '" + bad[1] + "'"), e.getMessage());
    }
  }
}
