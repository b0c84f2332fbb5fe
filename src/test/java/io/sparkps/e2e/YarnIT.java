package io.sparkps.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.Role;
import io.sparkps.spark.yarn.TaskSpec;
import io.sparkps.spark.yarn.YarnRun;
import io.sparkps.spark.yarn.YarnSubmitter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.spark.launcher.SparkAppHandle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SparkPS on a real YARN cluster (MiniYARNCluster in this JVM, containers in JVMs of their own):
 * preflight failures before submission, and a training run with 1 ps, 2 workers and an evaluator
 * submitted through {@link YarnSubmitter} in client and in cluster mode.
 */
class YarnIT {
  @TempDir
  static Path work;

  private static MiniYarn yarn;
  private static org.apache.hadoop.hdfs.MiniDFSCluster hdfs;
  private static Path data;

  @BeforeAll
  static void start() throws Exception {
    yarn = new MiniYarn(work);
    org.apache.hadoop.conf.Configuration dfs = new org.apache.hadoop.conf.Configuration();
    dfs.set(org.apache.hadoop.hdfs.MiniDFSCluster.HDFS_MINIDFS_BASEDIR, work.resolve("hdfs").toString());
    hdfs = new org.apache.hadoop.hdfs.MiniDFSCluster.Builder(dfs).numDataNodes(1).build();
    hdfs.waitActive();
    data = work.resolve("points.csv");
    Random random = new Random(3);
    List<String> lines = new ArrayList<>(List.of("x,y,label"));
    for (int i = 0; i < 600; i++) {
      int cls = i % 2;
      lines.add((cls == 0 ? -1.5 : 1.5) + random.nextGaussian() * 0.6 + "," + random.nextGaussian() + "," + cls);
    }
    Files.write(data, lines);
  }

  @AfterAll
  static void stop() {
    if (yarn != null) {
      yarn.close();
    }
    if (hdfs != null) {
      hdfs.shutdown();
    }
  }

  private YarnSubmitter.Builder train(Path output, String deployMode) {
    YarnSubmitter.Builder b = YarnSubmitter.builder()
        .setApplication(ShadedJar.path().toString(), "io.sparkps.cli.SparkPsCli", List.of("train", "--data", data.toString(),
            "--eval-data", data.toString(), "--feature-cols", "x,y", "--network", "mlp:8", "--epochs", "3",
            "--batch-size", "16", "--learning-rate", "0.02", "--no-progress", "--output", output.toString()))
        .setTaskSpec(Role.CHIEF, TaskSpec.of(1024, 1, 1)).setTaskSpec(Role.WORKER, TaskSpec.of(1024, 1, 1))
        .setTaskSpec(Role.PS, TaskSpec.of(768, 1, 1)).setTaskSpec(Role.EVALUATOR, TaskSpec.of(768, 1, 1))
        .optQueue("training").optDeployMode(deployMode).optAppName("sparkps-" + deployMode)
        .optDriver(1024, 1).optSparkHome(yarn.sparkHome.toString()).optLog(work.resolve(deployMode + ".log"));
    yarn.sparkConf().forEach(b::optConf);
    yarn.launcherEnv().forEach(b::optLauncherEnv);
    return b;
  }

  private int applications() throws Exception {
    try (YarnClient client = YarnClient.createYarnClient()) {
      client.init(yarn.conf);
      client.start();
      return client.getApplications().size();
    }
  }

  @Test
  void preflight_refusesWhatTheClusterCannotRun_beforeSubmitting() throws Exception {
    int before = applications();
    IllegalArgumentException queue = assertThrows(IllegalArgumentException.class,
        () -> train(work.resolve("q"), "client").optQueue("nightly").build().preflight(yarn.conf));
    assertTrue(queue.getMessage().contains("queue 'nightly' does not exist") && queue.getMessage().contains("training"),
        queue.getMessage());
    IllegalArgumentException label = assertThrows(IllegalArgumentException.class, () -> train(work.resolve("l"),
        "client").setTaskSpec(Role.WORKER, TaskSpec.of(1024, 1, 1).withNodeLabel("tpu")).build().preflight(yarn.conf));
    assertTrue(label.getMessage().contains("node label 'tpu' does not exist") && label.getMessage().contains("gpu"),
        label.getMessage());
    IllegalArgumentException big = assertThrows(IllegalArgumentException.class, () -> train(work.resolve("b"),
        "client").setTaskSpec(Role.WORKER, TaskSpec.of(4096, 1, 1)).build().preflight(yarn.conf));
    assertTrue(big.getMessage().contains("needs 4096 MiB") && big.getMessage().contains("2048 MiB"), big.getMessage());
    IllegalArgumentException many = assertThrows(IllegalArgumentException.class, () -> train(work.resolve("m"),
        "client").setTaskSpec(Role.WORKER, TaskSpec.of(2048, 1, 5)).build().preflight(yarn.conf));
    assertTrue(many.getMessage().contains("needs 8 executors"), many.getMessage());
    train(work.resolve("ok"), "client").build().preflight(yarn.conf);
    train(work.resolve("gpu"), "client").setTaskSpec(Role.CHIEF, TaskSpec.of(1024, 1, 1).withNodeLabel("gpu"))
        .setTaskSpec(Role.WORKER, TaskSpec.of(1024, 1, 1).withNodeLabel("gpu"))
        .setTaskSpec(Role.PS, TaskSpec.of(768, 1, 1).withNodeLabel("gpu"))
        .setTaskSpec(Role.EVALUATOR, TaskSpec.of(768, 1, 1).withNodeLabel("gpu")).build().preflight(yarn.conf);
    assertEquals(before, applications(), "no application was left behind");
  }

  private void trainsOnYarn(String deployMode) throws Exception {
    Path output = work.resolve("run-" + deployMode);
    YarnSubmitter submitter = train(output, deployMode).build();
    submitter.preflight(yarn.conf);
    YarnRun run = submitter.submit(yarn.conf);
    SparkAppHandle.State state = run.waitFor(Duration.ofMinutes(5));
    String log = Files.readString(work.resolve(deployMode + ".log"));
    assertEquals(SparkAppHandle.State.FINISHED, state, log);
    assertTrue(run.applicationId() != null && run.applicationId().startsWith("application_"), run.applicationId());
    String url = run.trackingUrl(yarn.conf);
    assertTrue(url != null && url.contains(run.applicationId()), "tracking URL " + url);
    assertTrue(Files.exists(output.resolve("summary.json")), "no summary.json; spark-submit said:\n" + log);
    String summary = Files.readString(output.resolve("summary.json"));
    assertTrue(Files.exists(output.resolve("model/metadata")), summary);
    // Two classes 3 standard deviations apart on x: the Bayes accuracy is 0.994.
    double accuracy = new com.fasterxml.jackson.databind.ObjectMapper().readTree(summary).get("evaluation")
        .get("accuracy").asDouble();
    assertTrue(accuracy > 0.95, "accuracy " + accuracy + " in " + summary);
    assertTrue(Files.readString(output.resolve("metrics.jsonl")).contains("\"role\":\"evaluator\""));
  }

  @Test
  void cliTrain_inClientMode_onYarnContainers() throws Exception {
    trainsOnYarn("client");
  }

  @Test
  void experiment_inClusterMode_onYarnContainers() throws Exception {
    io.sparkps.ml.Experiment experiment = io.sparkps.ml.Experiment.builder()
        .setNetworkJson(new org.deeplearning4j.nn.conf.NeuralNetConfiguration.Builder().seed(3)
            .updater(new org.nd4j.linalg.learning.config.Adam(0.02)).list()
            .layer(new org.deeplearning4j.nn.conf.layers.DenseLayer.Builder().nIn(2).nOut(8)
                .activation(org.nd4j.linalg.activations.Activation.TANH).build())
            .layer(new org.deeplearning4j.nn.conf.layers.OutputLayer.Builder(
                org.nd4j.linalg.lossfunctions.LossFunctions.LossFunction.MCXENT).nIn(8).nOut(2)
                .activation(org.nd4j.linalg.activations.Activation.SOFTMAX).build())
            .build().toJson())
        .setTrainSpec(io.sparkps.ml.TrainSpec.builder().optInput(io.sparkps.ml.InputFn.csv(data.toString(), "x", "y"))
            .optBatchSize(16).optEpochs(3).build())
        .optEvalSpec(io.sparkps.ml.EvalSpec.builder().optInput(io.sparkps.ml.InputFn.csv(data.toString(), "x", "y"))
            .build())
        .optCluster(2, 1).build();
    // The driver runs in a YARN container: the run directory goes to HDFS.
    String output = hdfs.getURI() + "/runs/experiment";
    YarnSubmitter.Builder b = train(work.resolve("unused"), "cluster").optAppName("sparkps-experiment");
    io.sparkps.ml.YarnExperiments.prepare(b, java.util.Map.of(Role.CHIEF, TaskSpec.of(1024, 1, 1), Role.WORKER,
        TaskSpec.of(1024, 1, 1), Role.PS, TaskSpec.of(768, 1, 1), Role.EVALUATOR, TaskSpec.of(768, 1, 1)), experiment,
        ShadedJar.path().toString(), output, work.resolve("staging"));
    YarnSubmitter submitter = b.optLog(work.resolve("experiment.log")).build();
    assertTrue(submitter.dryRun().contains("run-experiment --experiment "), submitter.dryRun());
    submitter.preflight(yarn.conf);
    YarnRun run = submitter.submit(yarn.conf);
    SparkAppHandle.State state = run.waitFor(Duration.ofMinutes(5));
    String log = Files.readString(work.resolve("experiment.log"));
    assertEquals(SparkAppHandle.State.FINISHED, state, log);
    assertTrue(submitter.dryRun().contains("--sha256 "), submitter.dryRun());
    try (var staged = Files.list(work.resolve("staging"))) {
      assertEquals(List.of(), staged.toList(), "the staged experiment is deleted once the application ended");
    }
    org.apache.hadoop.fs.FileSystem fs = hdfs.getFileSystem();
    org.apache.hadoop.fs.Path runs = new org.apache.hadoop.fs.Path("/runs/experiment");
    for (String f : List.of("summary.json", "metrics.jsonl", "report.html", "model.dl4j.zip", "model/metadata")) {
      assertTrue(fs.exists(new org.apache.hadoop.fs.Path(runs, f)), f + " is not in HDFS; spark-submit said:\n" + log);
    }
    String summary;
    try (var in = fs.open(new org.apache.hadoop.fs.Path(runs, "summary.json"))) {
      summary = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    }
    assertTrue(summary.contains("\"accuracy\"") && summary.contains("experiment.train"), summary);
  }

  /**
   * A worker that throws on a bad row inside its YARN container (cluster mode: the driver is in a
   * container too): the application is FAILED, and YARN's diagnostics name the worker and the row.
   */
  @Test
  void aWorkerFailingOnABadRow_inClusterMode_isReportedFailed_namingTheWorker() throws Exception {
    Path bad = work.resolve("bad.csv");
    List<String> lines = new ArrayList<>(Files.readAllLines(data));
    // Inf, not NaN: Spark's VectorAssembler refuses NaN in its own job before the workers see it.
    lines.set(451, "Inf," + lines.get(451).substring(lines.get(451).indexOf(',') + 1)); // data row 450
    Files.write(bad, lines);
    YarnSubmitter.Builder b = train(work.resolve("unused"), "cluster").optAppName("sparkps-bad-row")
        .optLog(work.resolve("bad-row.log"));
    b.setApplication(ShadedJar.path().toString(), "io.sparkps.cli.SparkPsCli", List.of("train", "--data", bad.toString(),
        "--feature-cols", "x,y", "--network", "mlp:8", "--epochs", "1", "--no-progress", "--output",
        hdfs.getURI() + "/runs/bad-row"));
    YarnRun run = b.build().submit(yarn.conf);
    SparkAppHandle.State state = run.waitFor(Duration.ofMinutes(5));
    String log = Files.readString(work.resolve("bad-row.log"));
    assertEquals(SparkAppHandle.State.FAILED, state, log);
    String diagnostics = run.diagnostics(yarn.conf);
    assertTrue(java.util.regex.Pattern.compile("sparkps train failed with exit code 1: sparkps train: training failed: "
        + "(chief 0|worker 1) on \\S+ \\(stage attempt \\d\\) failed: .*holds Infinity in row 450 of input partition 0")
        .matcher(diagnostics).find(), "YARN's diagnostics: " + diagnostics + "\nspark-submit said:\n" + log);
  }

  @Test
  void aFailingRun_isReportedFailed() throws Exception {
    Path output = work.resolve("run-failing");
    YarnSubmitter.Builder b = train(output, "client").optLog(work.resolve("failing.log"));
    b.setApplication(ShadedJar.path().toString(), "io.sparkps.cli.SparkPsCli", List.of("train", "--data", data.toString(),
        "--feature-cols", "x,y", "--label", "no_such_column", "--no-progress", "--output", output.toString()));
    YarnRun run = b.build().submit(yarn.conf);
    SparkAppHandle.State state = run.waitFor(Duration.ofMinutes(3));
    String log = Files.readString(work.resolve("failing.log"));
    assertEquals(SparkAppHandle.State.FAILED, state, log);
    assertTrue(log.contains("column 'no_such_column' is not in the data"), log);
  }
}
