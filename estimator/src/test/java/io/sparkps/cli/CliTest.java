package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ml.data.IdxDataFrames;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line in this JVM: Fashion-MNIST end to end, and every bad-argument case (exit 2). */
class CliTest {
  private static final String FMNIST = IdxDataFrames.FASHION_MNIST.toString();
  private static SparkSession spark;

  @TempDir
  Path dir;

  /** What one command printed and returned. */
  record Result(int code, String out, String err) {}

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(4, "cli");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  static Result sparkps(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = SparkPsCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void fashionMnist_trainPredictEvaluateInspect_endToEnd() throws Exception {
    Path run = dir.resolve("run");
    Result train = sparkps("train", "--data", FMNIST + "/train", "--eval-data", FMNIST + "/t10k", "--network",
        "mlp:64", "--epochs", "1", "--batch-size", "128", "--no-progress", "--output", run.toString());
    assertEquals(0, train.code(), train.err() + train.out());
    assertTrue(train.out().contains("[sparkps] step "), "plain progress lines: " + train.out());
    for (String f : List.of("metrics.jsonl", "summary.json", "report.html", "model.dl4j.zip", "model/metadata",
        "model/data/network.bin")) {
      assertTrue(Files.exists(run.resolve(f)), f + " missing; " + train.out());
    }
    // Checkpoints are on by default, in the run directory (the last one at the end of training).
    try (var saved = Files.list(run.resolve("checkpoints"))) {
      List<String> names = saved.map(p -> p.getFileName().toString()).toList();
      assertTrue(!names.isEmpty() && names.stream().allMatch(n -> n.matches("ckpt-\\d+")
          && Files.exists(run.resolve("checkpoints").resolve(n).resolve("checkpoint.properties"))), names.toString());
    }
    JsonNode summary = new ObjectMapper().readTree(run.resolve("summary.json").toFile());
    double accuracy = summary.get("evaluation").get("accuracy").asDouble();
    assertTrue(accuracy > 0.75, "test accuracy " + accuracy);
    assertTrue(summary.get("provenance").get("version.dl4j").asText().startsWith("1.0.0"), summary.toString());
    String report = Files.readString(run.resolve("report.html"));
    List<String> metrics = Files.readAllLines(run.resolve("metrics.jsonl"));
    assertEveryStep(summary, metrics, report);
    assertTrue(report.contains("aria-label=\"Evaluation\"") && report.contains("aria-label=\"Throughput\"")
        && report.contains("step time goes"), "the curves");
    assertEquals("SUCCEEDED", summary.get("status").asText());
    assertTrue(report.indexOf("id=\"headline\"") < report.indexOf("aria-label=\"Training loss\"")
        && report.indexOf("aria-label=\"Training loss\"") < report.indexOf("class=\"layers\"")
        && report.indexOf("class=\"layers\"") < report.indexOf("<details>"), "headline, curves, network, raw record");
    // what a reader sees in a browser: the headline first, four curves drawn, the raw record folded away
    String seen = io.sparkps.ps.testing.Chromium.dumpDom(run.resolve("report.html").toUri().toString(), 500);
    assertTrue(seen.contains("evaluation accuracy") && seen.contains("examples per second"), "the headline");
    assertEquals(4, seen.split("<svg ", -1).length - 1, "four charts");
    assertTrue(seen.contains("<details>") && !seen.contains("<details open"), "the raw record is folded");
    assertTrue(seen.contains("<td>DenseLayer</td>") && seen.contains("<td>OutputLayer</td>"), "the network's layers");
    assertTrue(!report.contains("<script") && !report.matches("(?s).*(src|href)=\"?https?:.*")
        && !report.matches("(?s).*url\\((?!#).*"), "the report fetches nothing");
    assertTrue(metrics.stream().anyMatch(l -> l.contains("\"role\":\"evaluator\"")) && metrics.stream()
        .anyMatch(l -> l.contains("\"loss\"")), metrics.toString());

    Result predict = sparkps("predict", "--model", run.toString(), "--data", FMNIST + "/t10k", "--output",
        dir.resolve("predictions").toString());
    assertEquals(0, predict.code(), predict.err());
    String expected = String.format(Locale.ROOT, "accuracy %.4f", accuracy);
    assertTrue(predict.out().contains("10000 predictions") && predict.out().contains(expected),
        "predict reproduces the reported " + expected + ": " + predict.out());

    // Predictions into a folder already holding some: refused, unless --overwrite; a folder of the
    // user's own files: refused even with --overwrite, and nothing in it touched.
    assertUsage(sparkps("predict", "--model", run.toString(), "--data", FMNIST + "/t10k", "--output",
        dir.resolve("predictions").toString()), "is not empty", "--overwrite");
    Result again = sparkps("predict", "--model", run.toString(), "--data", FMNIST + "/t10k", "--output",
        dir.resolve("predictions").toString(), "--overwrite");
    assertEquals(0, again.code(), again.err());
    assertTrue(again.out().contains("10000 predictions"), again.out());
    Path mine = userFolder("mine");
    assertUsage(sparkps("predict", "--model", run.toString(), "--data", FMNIST + "/t10k", "--output",
        mine.toString(), "--overwrite"), "not a dataset Spark wrote", "keep.csv", "sub/");
    assertUserFolderUntouched(mine);

    Result evaluate = sparkps("evaluate", "--model", run.resolve("model").toString(), "--data", FMNIST + "/t10k");
    assertEquals(0, evaluate.code(), evaluate.err());
    assertEquals(accuracy, new ObjectMapper().readTree(evaluate.out()).get("accuracy").asDouble(), 1e-12);

    Result inspectRun = sparkps("inspect", run.toString());
    assertEquals(0, inspectRun.code(), inspectRun.err());
    assertTrue(inspectRun.out().contains(summary.get("runId").asText()));
    Result inspectModel = sparkps("inspect", run.resolve("model").toString());
    assertEquals(0, inspectModel.code(), inspectModel.err());
    assertTrue(inspectModel.out().contains("param.numWorkers") && inspectModel.out().contains("lastEvaluation"),
        inspectModel.out());
  }

  /**
   * Every step of every worker is recorded: metrics.jsonl has one loss line per step of each worker
   * (with its step times), and the report's loss curve of each worker has one point per step.
   */
  private static void assertEveryStep(JsonNode summary, List<String> metrics, String report) {
    for (int w = 0; w < 2; w++) {
      long steps = summary.get("stepsDone").get("worker" + w).asLong();
      String role = w == 0 ? "chief" : "worker";
      String prefix = "\"role\":\"" + role + "\",\"index\":" + w + ",";
      List<String> lines = metrics.stream().filter(l -> l.contains(prefix) && l.contains("\"loss\"")).toList();
      assertEquals(steps, lines.size(), "one line per step of worker " + w);
      assertTrue(lines.get(0).contains("\"step\":1,") && lines.get(lines.size() - 1).contains("\"step\":" + steps + ","),
          lines.get(0));
      assertTrue(lines.stream().allMatch(l -> l.contains("\"computeMs\"") && l.contains("\"pullMs\"")
          && l.contains("\"pushMs\"") && l.contains("\"waitMs\"") && l.contains("\"staleness\"")), lines.get(0));
      int at = report.indexOf("aria-label=\"Training loss\"");
      String chart = report.substring(at, report.indexOf("</svg>", at));
      assertTrue(chart.contains("class=\"raw\" data-points=\"" + steps + "\""), "worker " + w + "'s raw loss curve: "
          + steps + " points");
    }
  }

  @Test
  void demo_withoutFashionMnist_saysHowToInstallIt_andTrainsOnGeneratedData() throws Exception {
    Path run = dir.resolve("demo");
    Result[] result = new Result[1];
    List<String> warnings = io.sparkps.ml.TaskSizeWarnings.during(() -> result[0] = sparkps("demo", "--dataset",
        dir.resolve("no-such-folder").toString(), "--epochs", "1", "--no-progress", "--output", run.toString()));
    Result r = result[0];
    assertEquals(0, r.code(), r.err() + r.out());
    assertEquals(List.of(), warnings, "the generated data is made in the tasks, which carry none of it");
    assertTrue(r.out().contains("apt-get install dataset-fashion-mnist") && r.out().contains("GENERATED"), r.out());
    JsonNode summary = new ObjectMapper().readTree(run.resolve("summary.json").toFile());
    assertTrue(summary.get("evaluation").get("accuracy").asDouble() > 0.9, summary.toString());
  }

  @Test
  void generate_clickThrough_writesTheGeneratorsRows_withThePlantedAuc_andRefusesBadArguments() throws Exception {
    Path out = dir.resolve("click-through");
    Result r = sparkps("generate", "click-through", "--rows", "20000", "--scale", "0.001", "--seed", "5",
        "--partitions", "2", "--planted-auc", "--output", out.toString());
    assertEquals(0, r.code(), r.err() + r.out());
    org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> written = spark.read().parquet(out.toString());
    io.sparkps.ml.datasets.ClickThroughData data = io.sparkps.ml.datasets.ClickThroughData.builder().optScale(0.001)
        .optSeed(5).build();
    assertEquals(40, written.columns().length, java.util.Arrays.toString(written.columns()));
    assertEquals(20000, written.count());
    assertEquals(0, written.except(data.rows(spark, 0, 20000, 3)).count(), "the generator's rows 0..19999");
    double clicks = written.agg(org.apache.spark.sql.functions.avg("label")).first().getDouble(0);
    assertEquals(0.25, clicks, 0.02, "the click rate");
    Matcher auc = Pattern.compile("20000 click-through rows \\(0 to 19999, seed 5, \\d+ ids in all\\) written to \\S+; "
        + "the planted model's AUC on them (0\\.\\d{4})").matcher(r.out());
    assertTrue(auc.find(), r.out());
    assertEquals(data.plantedAuc(written), Double.parseDouble(auc.group(1)), 1e-4);
    assertUsage(sparkps("generate", "click-through", "--rows", "10", "--output", out.toString()), "is not empty",
        "--overwrite");
    assertUsage(sparkps("generate", "criteo", "--rows", "10", "--output", dir.resolve("x").toString()),
        "unknown dataset 'criteo'", "click-through");
    assertUsage(sparkps("generate", "click-through", "--rows", "10", "--scale", "2", "--output",
        dir.resolve("y").toString()), "--scale must be in (0, 1], got 2.0");
  }

  @Test
  void presets_areSizedToTheData() {
    io.sparkps.ml.Dl4jEstimator lenet = new io.sparkps.ml.Dl4jEstimator()
        .setNetworkJson(Networks.resolve("lenet", 784, 10, 1, 1e-3));
    org.apache.spark.sql.types.StructType schema = IdxDataFrames.schema();
    assertTrue(java.util.Arrays.asList(lenet.transformSchema(schema).fieldNames()).contains("probability"));
    UsageException notSquare = org.junit.jupiter.api.Assertions.assertThrows(UsageException.class,
        () -> Networks.resolve("lenet", 700, 10, 1, 1e-3));
    assertTrue(notSquare.getMessage().contains("square"), notSquare.getMessage());
    String keras = Networks.resolve("keras:" + tiny(), 0, 0, 1, 1e-3);
    assertTrue(keras.contains("\"confs\"") && keras.contains("OutputLayer"), "a Keras .h5 file as DL4J's JSON: " + keras);
    String mlp = Networks.resolve("mlp:32,16", 20, 3, 1, 1e-3);
    assertTrue(mlp.contains("\"nout\" : 32") && mlp.contains("\"nout\" : 16") && mlp.contains("\"nout\" : 3"), mlp);
  }

  private Path tiny() {
    Path h5 = dir.resolve("tiny.h5");
    try (java.io.InputStream in = CliTest.class.getResourceAsStream("/keras/tiny.h5")) {
      Files.copy(in, h5, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return h5;
  }

  static void assertUsage(Result r, String... fragments) {
    assertEquals(2, r.code(), r.err());
    for (String f : fragments) {
      assertTrue(r.err().contains(f), "'" + f + "' in: " + r.err());
    }
    assertTrue(r.err().contains("Usage: sparkps"), "the usage follows: " + r.err());
  }

  @Test
  void badArguments_exitWithCode2_namingTheArgument() throws Exception {
    Path csv = dir.resolve("points.csv");
    Files.write(csv, List.of("x,y,label", "0.1,0.2,0", "0.9,0.8,1", "0.2,0.1,0", "0.8,0.9,1"));
    Path refused = dir.resolve("refused");
    assertUsage(sparkps("train", "--data", csv.toString(), "--bogus"), "Unknown option: '--bogus'");
    assertUsage(sparkps("train"), "Missing required option: '--data=PATH'");
    assertUsage(sparkps(refused, "train", "--data", dir.resolve("nope.parquet").toString()), "--data", "no such file");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,z"), "--feature-cols",
        "column 'z' is not in the data");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--label", "y2"), "--label",
        "column 'y2'");
    Path bad = dir.resolve("net.json");
    Files.writeString(bad, "{\"layers\": 3}");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--network", bad.toString()),
        "--network " + bad, "not a DL4J");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--network", "mlp:8,x"),
        "--network mlp:8,x");
    Path layerNorm = dir.resolve("layer_norm.json");
    Files.writeString(layerNorm, io.sparkps.ml.KerasNetworksTest.keras("layer_norm"));
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--network",
        layerNorm.toString()), "--network " + layerNorm, "layer 'ln' (LayerNormalization)", "BatchNormalization");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--network",
        "keras:" + dir.resolve("absent.h5")), "--network keras:", "absent.h5: no such file");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--consistency", "SOMETIMES"), "--consistency",
        "SOMETIMES");
    assertUsage(sparkps(refused, "train", "--data", csv.toString(), "--feature-cols", "x,y", "--gradient-accumulation", "0"),
        "--gradient-accumulation 0", "1 or more");
    assertFalse(Files.exists(refused), "a refused train leaves no run directory behind");
    assertUsage(sparkps("predict", "--model", dir.toString(), "--data", csv.toString()), "--model", "no saved model");
    assertUsage(sparkps("frobnicate"), "Unmatched argument");
  }

  @Test
  void aFailingWorker_exitsWithCode1_namingTheTaskAndStep() throws Exception {
    Path data = dir.resolve("nan.parquet");
    spark.sql("select array(cast(id % 2 as double), case when id = 150 then double('NaN') else 0.5 end) as features, "
        + "cast(id % 2 as double) as label from range(0, 200, 1, 1)").write().parquet(data.toString());
    Result r = sparkps("train", "--data", data.toString(), "--workers", "1", "--network", "mlp:4", "--no-progress",
        "--output", dir.resolve("run").toString());
    assertEquals(1, r.code(), r.err() + r.out());
    Matcher m = Pattern.compile("training failed: chief 0 on \\S+ \\(stage attempt \\d\\) failed: .*column "
        + "'features' holds NaN in row 150 of input partition 0 \\(read from file:\\S+nan.parquet/part-").matcher(r.err());
    assertTrue(m.find(), r.err());
    // the failed run's record: where it is, its status and cause, the steps done, what ended each attempt
    assertTrue(r.err().contains("the run's record: ") && r.err().contains("summary.json"), r.err());
    JsonNode summary = new ObjectMapper().readTree(dir.resolve("run").resolve("summary.json").toFile());
    assertEquals("FAILED", summary.get("status").asText());
    assertTrue(summary.get("cause").asText().contains("holds NaN in row 150"), summary.toString());
    assertTrue(summary.get("stageAttempts").get(0).get("endedBy").asText().contains("holds NaN"), summary.toString());
    assertTrue(Files.readString(dir.resolve("run").resolve("report.html")).contains("class=\"badge FAILED\""));
  }

  /** The real {@code main} in a child JVM, as a shell runs it: exit 0 for a run, 1 for a failing worker, 2 for a bad argument. */
  @Test
  void main_inAChildJvm_exits0ForARun_1ForAFailingWorker_2ForABadArgument() throws Exception {
    Path csv = dir.resolve("points.csv");
    Files.write(csv, List.of("x,y,label", "0.1,0.2,0", "0.9,0.8,1", "0.2,0.1,0", "0.8,0.9,1"));
    Result usage = child("train", "--data", csv.toString(), "--bogus");
    assertEquals(2, usage.code(), usage.err());
    assertTrue(usage.err().contains("Unknown option: '--bogus'"), usage.err());
    // Without OMP_NUM_THREADS, as a user's spark-submit often is: the worker gives OpenBLAS its task's one core.
    Result ok = child(List.of("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"), "train", "--data", csv.toString(),
        "--feature-cols", "x,y", "--workers", "1", "--network", "mlp:4", "--epochs", "1", "--no-progress", "--output",
        dir.resolve("ok").toString(), "--conf", "spark.sparkps.cli.logLevel=INFO");
    assertEquals(0, ok.code(), ok.err() + ok.out());
    assertTrue(Files.exists(dir.resolve("ok").resolve("summary.json")), ok.out());
    int cores = Runtime.getRuntime().availableProcessors();
    assertEquals(cores > 1, (ok.out() + ok.err()).contains("worker 0 on ") && (ok.out() + ok.err()).contains(
        "ND4J's OpenBLAS now computes with 1 thread, the task's cores, instead of " + cores), ok.err());
    Path nan = dir.resolve("nan.parquet");
    spark.sql("select array(cast(id % 2 as double), case when id = 50 then double('NaN') else 0.5 end) as features, "
        + "cast(id % 2 as double) as label from range(0, 100, 1, 1)").write().parquet(nan.toString());
    Result failed = child("train", "--data", nan.toString(), "--workers", "1", "--network", "mlp:4", "--no-progress",
        "--output", dir.resolve("failed").toString());
    assertEquals(1, failed.code(), failed.err() + failed.out());
    assertTrue(failed.err().contains("column 'features' holds NaN in row 50 of input partition 0"), failed.err());
  }

  /** {@link #sparkps} with {@code --output output} added. */
  static Result sparkps(Path output, String... args) {
    String[] all = java.util.Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--output";
    all[args.length + 1] = output.toString();
    return sparkps(all);
  }

  /** Runs {@code SparkPsCli.main} in a new JVM with this one's class path and Spark's opens; at most 3 minutes. */
  private Result child(String... args) throws Exception {
    return child(List.of(), args);
  }

  /** {@link #child(String...)} without the environment variables {@code unset} (OMP_NUM_THREADS is 1 otherwise). */
  private Result child(List<String> unset, String... args) throws Exception {
    List<String> command = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-Xmx1g"));
    java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
        .filter(a -> a.startsWith("--add-opens") || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
            || a.startsWith("-Djdk.reflect")).forEach(command::add);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), SparkPsCli.class.getName()));
    command.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "out", ".txt");
    Path err = Files.createTempFile(dir, "err", ".txt");
    ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().put("OMP_NUM_THREADS", "1");
    unset.forEach(pb.environment()::remove);
    Process p = pb.start();
    try {
      if (!p.waitFor(3, java.util.concurrent.TimeUnit.MINUTES)) {
        throw new AssertionError("sparkps " + String.join(" ", args) + " still runs after 3 minutes: " + Files.readString(err));
      }
    } finally {
      p.destroyForcibly();
    }
    return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  @Test
  void runExperiment_readsOnlyTheSubmittedFile() throws Exception {
    io.sparkps.ml.Experiment experiment = io.sparkps.ml.Experiment.builder()
        .setNetworkJson(Networks.resolve("mlp:4", 2, 2, 1, 1e-3))
        .setTrainSpec(io.sparkps.ml.TrainSpec.builder().optInput(io.sparkps.ml.InputFn.parquet("nope")).build()).build();
    io.sparkps.ml.ExperimentFiles.Staged staged = io.sparkps.ml.ExperimentFiles.write(experiment, dir.resolve("staging"));
    String other = "0".repeat(64);
    assertUsage(sparkps("run-experiment", "--experiment", staged.file().toString(), "--sha256", other, "--output",
        dir.resolve("run").toString()), "--experiment", "has SHA-256 " + staged.sha256(), "the submission named " + other,
        "is not read");
    assertUsage(sparkps("run-experiment", "--experiment", staged.file().toString(), "--output",
        dir.resolve("run").toString()), "Missing required option: '--sha256=HEX'");
    assertUsage(sparkps("run-experiment", "--experiment", dir.resolve("none.bin").toString(), "--sha256", other,
        "--output", dir.resolve("run").toString()), "no such file");
  }

  /** A folder of a user's own files: {@code sub/thesis.txt} and {@code keep.csv}. */
  private Path userFolder(String name) throws IOException {
    Path folder = dir.resolve(name);
    Files.createDirectories(folder.resolve("sub"));
    Files.writeString(folder.resolve("sub").resolve("thesis.txt"), "chapter one");
    Files.writeString(folder.resolve("keep.csv"), "a,b\n1,2\n");
    return folder;
  }

  private static void assertUserFolderUntouched(Path folder) throws IOException {
    try (java.util.stream.Stream<Path> all = Files.walk(folder)) {
      assertEquals(List.of("", "keep.csv", "sub", "sub/thesis.txt"), all.map(p -> folder.relativize(p).toString())
          .sorted().toList(), "the folder holds what it held");
    }
    assertEquals("chapter one", Files.readString(folder.resolve("sub").resolve("thesis.txt")));
    assertEquals("a,b\n1,2\n", Files.readString(folder.resolve("keep.csv")));
  }

  @Test
  void commandsThatWrite_refuseAFolderHoldingFiles_andTouchNothing() throws Exception {
    Path mine = userFolder("mine");
    assertUsage(sparkps("train", "--data", FMNIST + "/train", "--network", "mlp:8", "--steps", "2", "--no-progress",
        "--output", mine.toString()), "--output " + mine + " is not empty", "keep.csv", "sub/", "--overwrite");
    assertUsage(sparkps("demo", "--dataset", dir.resolve("no-such-folder").toString(), "--epochs", "1",
        "--no-progress", "--output", mine.toString()), "is not empty", "--overwrite");
    io.sparkps.ml.Experiment experiment = io.sparkps.ml.Experiment.builder()
        .setNetworkJson(Networks.resolve("mlp:4", 2, 2, 1, 1e-3))
        .setTrainSpec(io.sparkps.ml.TrainSpec.builder().optInput(io.sparkps.ml.InputFn.parquet("nope")).build()).build();
    io.sparkps.ml.ExperimentFiles.Staged staged = io.sparkps.ml.ExperimentFiles.write(experiment, dir.resolve("staging"));
    assertUsage(sparkps("run-experiment", "--experiment", staged.file().toString(), "--sha256", staged.sha256(),
        "--output", mine.toString()), "is not empty", "--overwrite");
    assertUserFolderUntouched(mine);
    Files.writeString(dir.resolve("a-file"), "x");
    assertUsage(sparkps("train", "--data", FMNIST + "/train", "--steps", "2", "--output",
        dir.resolve("a-file").toString()), "is a file, not a directory");
    assertEquals("x", Files.readString(dir.resolve("a-file")));
  }

  @Test
  void demo_withoutAnOutput_writesToTheFirstFreeDefault_keepingAnEarlierRun() throws Exception {
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
    Path base = dir.resolve("sparkps-demo");
    assertEquals(base.toString(), RunDirectory.firstFree(base.toString(), conf));
    Files.createDirectories(base);
    Files.createDirectories(dir.resolve("sparkps-demo-2"));
    assertEquals(base + "-3", RunDirectory.firstFree(base.toString(), conf));
  }

  /** A second attempt of the same application (YARN restarts a driver that died) goes on in its own directory. */
  @Test
  void aRunDirectory_isItsApplicationsToGoOnWriting_notAnothers() throws Exception {
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
    String run = dir.resolve("run").toString();
    RunDirectory.prepare(run, false, conf, "application_1_0001").write("metrics.jsonl", "{}\n");
    RunDirectory.prepare(run, false, conf, "application_1_0001").write("summary.json", "{}");
    UsageException other = org.junit.jupiter.api.Assertions.assertThrows(UsageException.class,
        () -> RunDirectory.prepare(run, false, conf, "application_1_0002"));
    assertTrue(other.getMessage().contains("is not empty (it holds .sparkps-run, metrics.jsonl, summary.json)"),
        other.getMessage());
    assertEquals("application_1_0001\n", Files.readString(dir.resolve("run").resolve(".sparkps-run")));
  }
}
