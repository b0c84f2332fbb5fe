package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.tracking.MlflowServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * {@code sparkps train} with {@code --mlflow-*} and {@code --tensorboard-dir}, against a real
 * {@code mlflow server}: the run is named and tagged as asked, holds the run directory's {@code
 * summary.json} (the same file) and {@code report.html}, and its TensorBoard scalars are written.
 */
@EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
class MlflowCliTest {
  private static org.apache.spark.sql.SparkSession spark;
  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(4, "cli-mlflow"); // the session the command finds, as in CliTest
    // TensorBoard's file takes 8 s to close: the command still ends with it closed and every record in it
    // (a fit once returned before the close, its records since the last flush not yet in the file).
    spark.sparkContext().hadoopConfiguration().set("fs.slowclose.impl",
        io.sparkps.ml.tracking.SlowCloseFileSystem.class.getName());
    spark.sparkContext().hadoopConfiguration().setBoolean("fs.slowclose.impl.disable.cache", true);
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @Test
  void aTrainRun_isTrackedWithItsRecordsFiles_andWritesTensorBoardScalars() throws Exception {
    Path csv = dir.resolve("points.csv");
    List<String> lines = new ArrayList<>(List.of("x,y,label"));
    Random random = new Random(5);
    for (int i = 0; i < 600; i++) {
      int label = i % 2;
      lines.add((label * 2 - 1 + random.nextGaussian() * 0.5) + "," + (random.nextGaussian() * 0.5) + "," + label);
    }
    Files.write(csv, lines);
    MlflowServer server = MlflowServer.shared();
    Path run = dir.resolve("run");
    CliTest.Result train = CliTest.sparkps("train", "--data", csv.toString(), "--feature-cols", "x,y", "--network",
        "mlp:8", "--epochs", "2", "--batch-size", "32", "--no-progress", "--output", run.toString(),
        "--mlflow-tracking-uri", server.uri(), "--mlflow-experiment", "cli", "--mlflow-run-name", "points-cli",
        "--mlflow-tag", "team=ml", "--mlflow-tag", "purpose=test", "--tensorboard-dir",
        "slowclose://" + dir.resolve("tb").toAbsolutePath());
    assertEquals(0, train.code(), train.err() + train.out());
    List<Path> tensorboardRuns;
    try (var runs = Files.list(dir.resolve("tb"))) {
      tensorboardRuns = runs.toList();
    }
    assertEquals(1, tensorboardRuns.size(), "one run, one subdirectory");
    JsonNode scalars = MlflowServer.tensorBoardScalars(tensorboardRuns.get(0)); // at once: the file is whole
    JsonNode tracked = server.read("name:points-cli", "loss");
    assertEquals("FINISHED", tracked.path("status").asText());
    assertEquals("cli", tracked.path("experiment").asText());
    assertEquals("ml", tracked.path("tags").path("team").asText());
    assertEquals("test", tracked.path("tags").path("purpose").asText());
    assertEquals("mlp:8", tracked.path("tags").path("sparkps.network").asText());
    assertEquals("2", tracked.path("params").path("epochs").asText());
    assertEquals(Files.readString(run.resolve("summary.json")), tracked.path("artifacts").path("summary.json")
        .asText(), "the run directory's summary.json");
    assertTrue(tracked.path("artifacts").path("report.html").asText().contains("<html"), tracked.toString());
    JsonNode summary = new ObjectMapper().readTree(run.resolve("summary.json").toFile());
    assertTrue(tracked.path("metrics").path("loss").size() > 0);

    assertEquals(tracked.path("metrics").path("loss").size(), scalars.path("loss").size(),
        "the same steps in TensorBoard as in MLflow: " + tracked.path("metrics").path("loss") + " and "
            + scalars.path("loss"));
    assertTrue(summary.path("examples").asLong() > 0);
  }
}
