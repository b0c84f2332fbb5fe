package io.sparkps.e2e;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.NodeLabel;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * A real YARN cluster in the test JVM: a ResourceManager with the CapacityScheduler (queues
 * {@code default} and {@code training}), two NodeManagers launching real container JVMs, the
 * second carrying the exclusive node label {@code gpu}; its {@code yarn-site.xml} in a conf
 * folder; and a Spark home for spark-submit and the containers built from the test class path
 * (Spark and Hadoop only: SparkPS comes in its shaded jar).
 */
final class MiniYarn implements AutoCloseable {
  static final String LABEL = "gpu";
  final MiniYARNCluster cluster;
  final Path confDir;
  final Path sparkHome;
  final Configuration conf;

  MiniYarn(Path work) throws Exception {
    YarnConfiguration c = new YarnConfiguration();
    c.set(YarnConfiguration.RM_SCHEDULER,
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    c.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", 6144);
    c.setInt(YarnConfiguration.NM_VCORES, 8);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    c.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 2048);
    c.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    c.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    c.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100f);
    c.setLong(YarnConfiguration.NM_PROCESS_KILL_WAIT_MS, 100);
    c.setLong(YarnConfiguration.NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, 100);
    // Heartbeats at a test's pace: the scheduler places containers when a NodeManager beats (every
    // second by default), so each allocation of an application waited up to a second for it.
    c.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 100);
    c.setBoolean(YarnConfiguration.NODE_LABELS_ENABLED, true);
    c.set(YarnConfiguration.FS_NODE_LABELS_STORE_ROOT_DIR, work.resolve("labels").toUri().toString());
    c.set("yarn.scheduler.capacity.root.queues", "default,training");
    c.set("yarn.scheduler.capacity.root.default.capacity", "50");
    c.set("yarn.scheduler.capacity.root.training.capacity", "50");
    c.set("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    c.set("yarn.scheduler.capacity.root.training.maximum-capacity", "100");
    // One user (the test) may use the whole cluster, not only its queue's share.
    c.set("yarn.scheduler.capacity.root.default.user-limit-factor", "2");
    c.set("yarn.scheduler.capacity.root.training.user-limit-factor", "2");
    c.set("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5");
    c.set("yarn.scheduler.capacity.root.accessible-node-labels", LABEL);
    c.set("yarn.scheduler.capacity.root.accessible-node-labels." + LABEL + ".capacity", "100");
    c.set("yarn.scheduler.capacity.root.training.accessible-node-labels", LABEL);
    c.set("yarn.scheduler.capacity.root.training.accessible-node-labels." + LABEL + ".capacity", "100");
    c.set("yarn.scheduler.capacity.root.default.accessible-node-labels", "");
    cluster = new MiniYARNCluster("sparkps-yarn", 2, 1, 1);
    cluster.init(c);
    cluster.start();
    this.conf = cluster.getConfig();
    var labels = cluster.getResourceManager().getRMContext().getNodeLabelManager();
    labels.addToCluserNodeLabels(List.of(NodeLabel.newInstance(LABEL, true)));
    NodeId gpuNode = cluster.getNodeManager(1).getNMContext().getNodeId();
    labels.replaceLabelsOnNode(Map.of(gpuNode, Set.of(LABEL)));
    confDir = Files.createDirectories(work.resolve("hadoop-conf"));
    try (OutputStream out = Files.newOutputStream(confDir.resolve("yarn-site.xml"))) {
      conf.writeXml(out);
    }
    sparkHome = sparkHome(work.resolve("spark-home"));
  }

  /** A Spark home: jars/ (links to the class path's Spark and Hadoop jars, the Guava that Spark ships) and bin/spark-submit. */
  private static Path sparkHome(Path home) throws IOException {
    Path jars = Files.createDirectories(home.resolve("jars"));
    Stream.concat(Stream.of(System.getProperty("java.class.path").split(File.pathSeparator)),
            Stream.of(Path.of(System.getProperty("sparkps.sparkExtraJars")).resolve(System.getProperty("sparkps.sparkGuavaJar")).toString()))
        .filter(p -> p.endsWith(".jar") && !p.contains("sparkps") && !p.contains("/io/grpc/")
            && !p.contains("/com/google/protobuf/") && !p.contains("/com/google/guava/guava/")
            && !p.contains("/org/nd4j/") && !p.contains("/org/deeplearning4j/") && !p.contains("/org/bytedeco/")
            && !p.contains("minicluster") && !p.contains("/org/junit/") && !p.contains("/org/bouncycastle/"))
        .map(Path::of).distinct().forEach(p -> {
          try {
            Files.createSymbolicLink(jars.resolve(p.getFileName()), p);
          } catch (java.nio.file.FileAlreadyExistsException same) {
            // two class path entries with one file name: the first wins
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
    Path bin = Files.createDirectories(home.resolve("bin"));
    Path submit = bin.resolve("spark-submit");
    Files.writeString(submit, "#!/usr/bin/env bash\n"
        + "# spark-submit of this test's Spark home: Spark's jars and the Hadoop configuration folder.\n"
        + "exec \"${JAVA_HOME}/bin/java\" ${SPARKPS_SUBMIT_OPTS} -cp \"${SPARK_HOME}/jars/*:${HADOOP_CONF_DIR}\" "
        + "org.apache.spark.deploy.SparkSubmit \"$@\"\n");
    Files.setPosixFilePermissions(submit, PosixFilePermissions.fromString("rwxr-xr-x"));
    return home;
  }

  /** Settings every submission to this cluster needs. */
  Map<String, String> sparkConf() {
    Map<String, String> conf = new java.util.HashMap<>(Map.of("spark.yarn.jars", "local:" + sparkHome.resolve("jars")
        + "/*", "spark.yarn.appMasterEnv.SPARK_LOCAL_IP", "127.0.0.1", "spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1",
        "spark.ui.enabled", "false", "spark.yarn.submit.waitAppCompletion", "true",
        // Spark's application master asks for containers every 3 s once its first requests are out, and
        // spark-submit looks at the application's state every second: both at a test's pace.
        "spark.yarn.scheduler.heartbeat.interval-ms", "250", "spark.yarn.report.interval", "250ms"));
    // The build's options for the JVMs tests start (pom.xml, test.childJvmOptions): YARN does not pass the
    // environment on to its containers, so they are handed to the application master's and executors' JVMs.
    String childJvm = System.getenv("JAVA_TOOL_OPTIONS");
    if (childJvm != null && !childJvm.isBlank()) {
      conf.put("spark.yarn.appMasterEnv.JAVA_TOOL_OPTIONS", childJvm);
      conf.put("spark.executorEnv.JAVA_TOOL_OPTIONS", childJvm);
    }
    return conf;
  }

  /** The environment of spark-submit. */
  Map<String, String> launcherEnv() {
    return Map.of("SPARK_HOME", sparkHome.toString(), "HADOOP_CONF_DIR", confDir.toString(),
        "JAVA_HOME", System.getProperty("java.home"), "SPARK_LOCAL_IP", "127.0.0.1",
        "SPARKPS_SUBMIT_OPTS", System.getProperty("sparkps.addOpens", "") + " -Xmx1g", "OMP_NUM_THREADS", "1");
  }

  @Override
  public void close() {
    Thread stopper = new Thread(cluster::stop, "mini-yarn-stop");
    stopper.setDaemon(true);
    stopper.start();
    try {
      stopper.join(60_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
