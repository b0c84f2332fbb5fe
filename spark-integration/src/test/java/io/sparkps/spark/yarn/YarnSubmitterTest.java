package io.sparkps.spark.yarn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.Role;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The TaskSpec-to-Spark mapping and the dry run, without a cluster. */
class YarnSubmitterTest {
  private static YarnSubmitter.Builder base() {
    return YarnSubmitter.builder().setApplication("sparkps-all.jar", "io.sparkps.cli.SparkPsCli",
            List.of("train", "--data", "hdfs:///d", "--workers", "3"))
        .setTaskSpec(Role.CHIEF, TaskSpec.of(4096, 2, 1)).setTaskSpec(Role.WORKER, TaskSpec.of(4096, 2, 2))
        .setTaskSpec(Role.PS, TaskSpec.of(2048, 1, 2));
  }

  @Test
  void specs_becomeOneExecutorPerTask_sizedToTheLargestRole_andTheNotesSaySo() {
    YarnSubmitter s = base().setTaskSpec(Role.EVALUATOR, TaskSpec.of(1024, 1, 1)).optQueue("training")
        .optEnv("DATA_VERSION", "7").optHadoopFileSystems(List.of("hdfs://nn2:8020")).optAppName("fmnist")
        .optMaxAttempts(2).optPackages(List.of("org.example:features:1.2")).build();
    Map<String, String> conf = s.sparkConf();
    assertEquals("6", conf.get("spark.executor.instances"), "1 chief + 2 workers + 2 ps + 1 evaluator");
    assertEquals("2", conf.get("spark.executor.cores"));
    assertEquals("2", conf.get("spark.task.cpus"));
    assertEquals("3712m", conf.get("spark.executor.memory"), "4096 MiB containers less 384 MiB overhead");
    assertEquals("384m", conf.get("spark.executor.memoryOverhead"));
    assertEquals("false", conf.get("spark.dynamicAllocation.enabled"));
    assertEquals("1.0", conf.get("spark.scheduler.minRegisteredResourcesRatio"));
    assertEquals("training", conf.get("spark.yarn.queue"));
    assertEquals("2", conf.get("spark.executorEnv.OMP_NUM_THREADS"));
    assertEquals("1", conf.get("spark.sparkps.ps.cpus"), "the ps's own vcores, for its task resource profile");
    assertEquals("1", conf.get("spark.sparkps.evaluator.cpus"));
    assertEquals("7", conf.get("spark.executorEnv.DATA_VERSION"));
    assertEquals("7", conf.get("spark.yarn.appMasterEnv.DATA_VERSION"));
    assertEquals("hdfs://nn2:8020", conf.get("spark.kerberos.access.hadoopFileSystems"));
    assertEquals("fmnist", conf.get("spark.app.name"));
    assertEquals("2", conf.get("spark.yarn.maxAppAttempts"));
    assertEquals("org.example:features:1.2", conf.get("spark.jars.packages"));
    assertEquals(2, s.plan().notes().size(), s.plan().notes().toString());
    assertTrue(s.plan().notes().get(0).contains("ps asked for 2048 MiB, 1 vcores"), s.plan().notes().toString());
  }

  @Test
  void largeContainers_keepSparksTenPercentOverhead() {
    YarnSubmitter s = base().setTaskSpec(Role.WORKER, TaskSpec.of(11000, 4, 2)).build();
    assertEquals("10000m", s.sparkConf().get("spark.executor.memory"));
    assertEquals("1000m", s.sparkConf().get("spark.executor.memoryOverhead"));
  }

  @Test
  void labelsAndGpus_applyToAllExecutors_andDifferingLabelsAreNamed() {
    YarnSubmitter same = base().setTaskSpec(Role.CHIEF, TaskSpec.of(4096, 2, 1).withNodeLabel("gpu").withGpus(1))
        .setTaskSpec(Role.WORKER, TaskSpec.of(4096, 2, 2).withNodeLabel("gpu").withGpus(1))
        .setTaskSpec(Role.PS, TaskSpec.of(2048, 1, 1).withNodeLabel("gpu")).build();
    assertEquals("gpu", same.sparkConf().get("spark.yarn.executor.nodeLabelExpression"));
    assertEquals("1", same.sparkConf().get("spark.executor.resource.gpu.amount"));
    assertEquals("1", same.sparkConf().get("spark.task.resource.gpu.amount"));
    YarnSubmitter mixed = base().setTaskSpec(Role.WORKER, TaskSpec.of(4096, 2, 2).withNodeLabel("gpu")).build();
    assertEquals("gpu", mixed.sparkConf().get("spark.yarn.executor.nodeLabelExpression"));
    assertTrue(mixed.plan().notes().stream().anyMatch(n -> n.contains("different node labels") && n.contains("'gpu'")),
        mixed.plan().notes().toString());
  }

  @Test
  void dryRun_printsTheSparkSubmitCommand_withTheNotes() {
    String dry = base().optDeployMode("cluster").optFiles(List.of("conf/app.properties")).build().dryRun();
    assertTrue(dry.startsWith("spark-submit --master yarn --deploy-mode cluster --conf spark.executor.instances=5"),
        dry);
    assertTrue(dry.contains("--files conf/app.properties --class io.sparkps.cli.SparkPsCli sparkps-all.jar train "
        + "--data hdfs:///d --workers 3"), dry);
    assertTrue(dry.contains("\n# ps asked for 2048 MiB"), dry);
  }

  @Test
  void badSpecs_areNamed() {
    assertTrue(assertThrows(IllegalArgumentException.class, () -> TaskSpec.of(100, 1, 1)).getMessage()
        .contains("memoryMb is 100"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> base().setTaskSpec(Role.CHIEF,
        TaskSpec.of(1024, 1, 2)).build()).getMessage().contains("chief's TaskSpec must have exactly 1 instance"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> base().setTaskSpec(Role.PS, TaskSpec.of(1024, 1, 0))
        .build()).getMessage().contains("ps TaskSpec must have at least 1"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> base().optDeployMode("remote")).getMessage()
        .contains("'remote'"));
  }
}
