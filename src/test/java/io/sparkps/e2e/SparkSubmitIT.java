package io.sparkps.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shaded jar as users run it: {@code spark-submit --master local[3] --class
 * io.sparkps.cli.SparkPsCli sparkps-estimator_2.1x-*-all.jar train ...} through
 * {@code org.apache.spark.deploy.SparkSubmit} in a JVM of its own whose class path holds Spark and
 * Hadoop only (no unshaded gRPC, protobuf, Guava, DL4J or SparkPS classes).
 */
class SparkSubmitIT {
  @TempDir
  Path dir;

  /** The test class path without SparkSPS and the libraries the shaded jar must bring itself. */
  private static String sparkClassPath() {
    return Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
        .filter(p -> !p.contains("sparkps") && !p.contains("/io/grpc/") && !p.contains("/com/google/protobuf/")
            && !p.contains("/com/google/guava/") && !p.contains("/org/nd4j/") && !p.contains("/org/deeplearning4j/")
            && !p.contains("/org/bytedeco/") && !p.contains("/info/picocli/") && !p.contains("/org/jfree/")
            && !p.contains("/target/test-classes"))
        .collect(Collectors.joining(File.pathSeparator));
  }

  private static void writeCsv(Path file, int rows, long seed) throws Exception {
    Random random = new Random(seed);
    List<String> lines = new ArrayList<>(List.of("x,y,label"));
    for (int i = 0; i < rows; i++) {
      int cls = i % 2;
      lines.add((cls == 0 ? -1.5 : 1.5) + random.nextGaussian() * 0.6 + "," + random.nextGaussian() + "," + cls);
    }
    Files.write(file, lines);
  }

  private String submit(Path log, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(List.of(System.getProperty("sparkps.addOpens", "").split(" ")));
    command.addAll(List.of("-Xmx2g", "-cp", sparkClassPath(), "org.apache.spark.deploy.SparkSubmit",
        "--master", "local[3]", "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1", "--class", "io.sparkps.cli.SparkPsCli",
        ShadedJar.path().toString()));
    command.addAll(List.of(args));
    command.removeIf(String::isEmpty);
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("OMP_NUM_THREADS", "1");
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process p = pb.start();
    boolean ended = p.waitFor(240, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly();
    }
    String out = Files.readString(log);
    assertTrue(ended, "spark-submit did not end within 240 s:\n" + out);
    assertEquals(0, p.exitValue(), out);
    return out;
  }

  @Test
  void shadedJar_trainsAndPredictsThroughSparkSubmit_onLocal3() throws Exception {
    Path train = dir.resolve("train.csv");
    writeCsv(train, 800, 1);
    Path run = dir.resolve("run");
    String log = submit(dir.resolve("train.log"), "train", "--data", train.toString(), "--feature-cols", "x,y",
        "--network", "mlp:8", "--epochs", "3", "--batch-size", "16", "--learning-rate", "0.02", "--no-progress",
        "--output", run.toString());
    assertTrue(log.contains("sparkps: trained in"), log);
    for (String file : List.of("summary.json", "metrics.jsonl", "report.html", "model.dl4j.zip", "model/metadata")) {
      assertTrue(Files.exists(run.resolve(file)), file + " is missing from the run directory:\n" + log);
    }
    String predicted = submit(dir.resolve("predict.log"), "predict", "--model", run.toString(), "--data",
        train.toString(), "--feature-cols", "x,y");
    // a binary label: the line gives the AUC and the log loss, as click-through is measured
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(
        "sparkps: 800 predictions; auc ([0-9.]+), logLoss ([0-9.]+)").matcher(predicted);
    assertTrue(m.find(), predicted);
    assertTrue(Double.parseDouble(m.group(1)) > 0.95, predicted);
    assertTrue(Double.parseDouble(m.group(2)) < 0.3, predicted);
  }
}
