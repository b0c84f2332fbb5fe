package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.tracking.MlflowServer;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.shade.jackson.databind.JsonNode;

/**
 * A fit tracked in a real {@code mlflow server}, read back with MLflow's own Python client: the
 * run's params are the fit's settings, every step the chief recorded is in its loss history with
 * the same values, the evaluator's scores are there, and the run is FINISHED when {@code fit}
 * returns. The same fit writes the same steps as TensorBoard scalars.
 */
@EnabledIfSystemProperty(named = MlflowServer.PYTHON, matches = ".+")
class MlflowFitTest {
  @TempDir
  static Path dir;
  private static MlflowServer server;
  private static SparkSession spark;
  private static Dataset<Row> points;

  @BeforeAll
  static void start() throws Exception {
    server = MlflowServer.shared();
    spark = LocalSpark.start(4, "mlflow");
    Random random = new Random(3);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 1200; i++) {
      int cls = i % 3;
      rows.add(RowFactory.create((cls - 1) * 2 + random.nextGaussian() * 0.6, (cls == 2 ? 2.5 : -1)
          + random.nextGaussian() * 0.6, (double) cls));
    }
    points = new org.apache.spark.ml.feature.VectorAssembler().setInputCols(new String[] {"x", "y"})
        .setOutputCol("features").transform(spark.createDataFrame(rows, new StructType().add("x", DataTypes.DoubleType)
            .add("y", DataTypes.DoubleType).add("label", DataTypes.DoubleType))).repartition(2).cache();
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void aTrackingUriThatIsNoServer_refusesTheFit_beforeAnythingStarts() {
    Dl4jEstimator e = new Dl4jEstimator().setNetwork("mlp:16").setMlflowTrackingUri("file:///data/mlruns");
    IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> e.fitAsync(points));
    assertTrue(refused.getMessage().startsWith("MLflow tracking URI 'file:///data/mlruns' is not http(s)://host:port"),
        refused.getMessage());
    assertEquals(List.of(), io.sparkps.spark.TrainingJob.running(), "no run was started");
  }

  @Test
  void aTrackedFit_logsItsSettings_everyStepsLoss_andItsEvaluations_andEndsFinished() throws Exception {
    Dl4jEstimator e = new Dl4jEstimator().setNetwork("mlp:16")
        .setNumWorkers(2).setNumPs(1).setBatchSize(32).setEpochs(3).setEvalEverySeconds(0.5)
        .setMlflowTrackingUri(server.uri()).setMlflowExperimentName("sparkps-fits").setMlflowRunName("points")
        .setMlflowTags(Map.of("team", "ml")).setTensorboardLogDir(dir.resolve("tensorboard").toUri().toString())
        .setTensorboardHistogramSteps(10);
    FitJob job = e.fitAsync(points, points);
    Dl4jModel model = job.join();
    JsonNode scalars = MlflowServer.tensorBoardScalars(dir.resolve("tensorboard").resolve(job.runId()));
    String runId = job.mlflowRunId();
    assertNotNull(runId, "the fit was tracked");
    JsonNode run = server.read(runId, "loss", "worker1/loss", "eval/accuracy", "stepMs");

    assertEquals("FINISHED", run.path("status").asText(), "ended before fit returned");
    assertEquals("points", run.path("run_name").asText());
    assertEquals("sparkps-fits", run.path("experiment").asText());
    assertEquals("ml", run.path("tags").path("team").asText());
    JsonNode params = run.path("params");
    assertEquals("2", params.path("numWorkers").asText());
    assertEquals("32", params.path("batchSize").asText());
    assertEquals("3", params.path("epochs").asText());
    assertEquals("SYNC", params.path("consistency").asText());
    assertEquals("features", params.path("featuresCol").asText(params.toString()));
    assertEquals("mlp:16", params.path("network").asText());
    assertEquals(Integer.toString(2 * 16 + 16 + 16 * 3 + 3), params.path("networkParameters").asText());
    assertTrue(params.path("dataSchema").asText().startsWith("struct<x:double,y:double,label:double,features:"),
        params.path("dataSchema").asText());
    assertEquals(job.runId(), params.path("sparkpsRunId").asText());
    assertEquals("1200", params.path("dataRows").asText());

    List<TaskProgress> chief = model.summary().workerHistory().stream()
        .filter(p -> p.role() == Role.CHIEF && p.metrics().containsKey("loss")).toList();
    JsonNode loss = run.path("metrics").path("loss");
    assertEquals(chief.size(), loss.size(),
        "every step the chief recorded (the run's tags: " + run.path("tags") + ")");
    for (int i = 0; i < chief.size(); i++) {
      assertEquals(chief.get(i).step(), loss.get(i).get(0).asLong());
      assertEquals(chief.get(i).metrics().get("loss"), loss.get(i).get(1).asDouble(), 1e-6);
    }
    assertTrue(run.path("metrics").path("worker1/loss").size() > 0);
    assertEquals(chief.size(), run.path("metrics").path("stepMs").size());
    JsonNode accuracy = run.path("metrics").path("eval/accuracy");
    List<TaskProgress> evaluations = model.summary().evaluatorHistory().stream()
        .filter(p -> p.metrics().containsKey("accuracy")).toList();
    assertTrue(evaluations.size() >= 1);
    assertEquals(evaluations.size(), accuracy.size(), "every evaluation");
    for (int i = 0; i < evaluations.size(); i++) {
      assertEquals(evaluations.get(i).step(), accuracy.get(i).get(0).asLong());
      assertEquals(evaluations.get(i).metrics().get("accuracy"), accuracy.get(i).get(1).asDouble(), 1e-9);
    }

    // The model's summary, as the run's artifact.
    JsonNode summary = new org.nd4j.shade.jackson.databind.ObjectMapper().readTree(
        run.path("artifacts").path("summary.json").asText());
    assertEquals(model.summary().workerHistory().size(), summary.path("workers").size(), summary.toString());

    // The trained model, as an MLflow model of the spark flavor recorded as the run's (tests_mlflow loads it back).
    assertTrue(run.path("artifacts").has("model"), run.path("artifacts").toString());
    JsonNode logged = new org.nd4j.shade.jackson.databind.ObjectMapper().readTree(
        run.path("tags").path("mlflow.log-model.history").asText("[]"));
    assertEquals(1, logged.size(), logged.toString());
    assertEquals("model", logged.get(0).path("artifact_path").asText());
    assertEquals("sparkml", logged.get(0).path("flavors").path("spark").path("model_data").asText());
    assertEquals(runId, logged.get(0).path("run_id").asText());
    long modelMade = java.time.LocalDateTime.parse(logged.get(0).path("utc_time_created").asText().replace(' ', 'T'))
        .toInstant(java.time.ZoneOffset.UTC).toEpochMilli();
    assertTrue(run.path("end_time").asLong() >= modelMade, "the run was ended after its model was logged: "
        + run.path("end_time") + " < " + modelMade);

    // The same fit's TensorBoard scalars, in a subdirectory named by the run: the same steps.
    JsonNode tbLoss = scalars.path("loss");
    assertEquals(chief.size(), tbLoss.size(), "every step the chief recorded");
    for (int i = 0; i < chief.size(); i++) {
      assertEquals(chief.get(i).step(), tbLoss.get(i).get(0).asLong());
      assertEquals(chief.get(i).metrics().get("loss").floatValue(), tbLoss.get(i).get(1).floatValue(), 0f);
    }
    assertEquals(evaluations.size(), scalars.path("eval/accuracy").size());

    // Histograms of the network's variables every 10 steps of the chief, read from the ps as it trained.
    JsonNode histograms = MlflowServer.tensorBoardHistograms(dir.resolve("tensorboard").resolve(job.runId()));
    assertTrue(histograms.size() >= 2, histograms.toString());
    double values = 0;
    for (java.util.Iterator<Map.Entry<String, JsonNode>> it = histograms.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> tag = it.next();
      assertTrue(tag.getKey().startsWith("params/"), tag.getKey());
      JsonNode events = tag.getValue();
      assertTrue(events.size() >= 3, tag.getKey() + " at " + events.size() + " steps");
      for (int i = 1; i < events.size(); i++) {
        assertEquals(0, events.get(i).get(0).asLong() % 10, "every 10 steps after the first: " + tag);
      }
      JsonNode last = events.get(events.size() - 1);
      assertTrue(last.get(1).asDouble() <= last.get(2).asDouble());
      values += last.get(3).asDouble();
    }
    assertEquals(2 * 16 + 16 + 16 * 3 + 3, values, 0.0, "every parameter of the network, in one histogram or another");
  }
}
