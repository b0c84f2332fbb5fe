package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line's embedding models: generated click-through data, a Wide &amp; Deep model trained, saved and scored. */
class EmbeddingCliTest {
  private static SparkSession spark;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(4, "cli-embeddings");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @Test
  void train_withCategoricalCols_andWide_trainsAWideAndDeepModel_thatScoresBetterThanChance() throws Exception {
    Path data = dir.resolve("clicks");
    assertEquals(0, CliTest.sparkps("generate", "click-through", "--rows", "30000", "--scale", "0.001", "--seed", "5",
        "--partitions", "2", "--output", data.toString()).code());
    List<String> categorical = new java.util.ArrayList<>();
    for (int f = 1; f <= 26; f++) {
      categorical.add("C" + f);
    }
    Path run = dir.resolve("embedding-run");
    CliTest.Result r = CliTest.sparkps("train", "--data", data.toString(), "--categorical-cols", String.join(",", categorical),
        "--numeric-cols", "I1,I2,I3", "--embedding-dim", "4", "--embedding-min-count", "20", "--network", "mlp:16",
        "--wide", "--async-tables", "--workers", "2", "--ps", "2", "--batch-size", "128", "--output", run.toString());
    assertEquals(0, r.code(), r.err() + r.out());
    // The record lists the embedding columns as a table: settings, the table each trains, its rows.
    org.nd4j.shade.jackson.databind.JsonNode tables = new org.nd4j.shade.jackson.databind.ObjectMapper()
        .readTree(run.resolve("summary.json").toFile()).path("embeddingTables");
    assertEquals(26, tables.size(), tables.toString());
    org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> clicks = spark.read().parquet(data.toString());
    long ids = 0;
    for (int f = 1; f <= 26; f++) {
      org.nd4j.shade.jackson.databind.JsonNode t = tables.get(f - 1);
      assertEquals("C" + f, t.path("column").asText());
      assertEquals(4, t.path("dim").asInt());
      assertEquals("ROWWISE_ADAGRAD", t.path("optimizer").asText());
      assertEquals(20, t.path("minCount").asInt());
      assertEquals(tables.get(0).path("table").asText(), t.path("table").asText(), "columns alike share a table");
      assertEquals(tables.get(0).path("rows").asLong(), t.path("rows").asLong());
      ids += clicks.select("C" + f).distinct().count(); // (a null is the column's missing row)
    }
    long rows = tables.get(0).path("rows").asLong();
    assertTrue(rows > 26 && rows <= ids, rows + " rows for " + ids + " distinct ids and missing values (min count 20)");
    String report = java.nio.file.Files.readString(run.resolve("report.html"));
    assertTrue(report.contains("<table id=\"embeddings\">") && report.contains("<td>C26</td>")
        && report.contains(String.format(java.util.Locale.ROOT, "%,d", rows)), "the report's table");
    assertTrue(!report.contains("<th>embeddingColumns</th>"), "not the columns' JSON in the settings");
    io.sparkps.ml.Dl4jModel model = io.sparkps.ml.Dl4jModel.load(run.resolve("model").toString());
    assertTrue(model.hasEmbeddings());
    // the mlp preset with --wide: a graph whose numeric values and 26 wide weights skip the hidden layer
    org.deeplearning4j.nn.graph.ComputationGraph graph = (org.deeplearning4j.nn.graph.ComputationGraph) model.network();
    assertEquals(16 + 3 + 26, graph.getLayer("output").getParam("W").size(0), "the output reads 16 hidden units, "
        + "3 numeric values and 26 wide weights");
    org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> heldOut = io.sparkps.ml.datasets.ClickThroughData.builder()
        .optScale(0.001).optSeed(5).build().rows(spark, 500_000, 5000, 1);
    org.apache.spark.ml.evaluation.BinaryClassificationEvaluator evaluator =
        new org.apache.spark.ml.evaluation.BinaryClassificationEvaluator().setRawPredictionCol("probability")
            .setNumBins(0);   // the exact area: the default bins the curve, and its bins fall differently run to run
    double auc = evaluator.evaluate(model.transform(heldOut));
    System.out.printf("CLI Wide & Deep model: held-out AUC %.4f%n", auc);
    assertTrue(auc > 0.6, "held-out AUC " + auc);
    // Scored by the join of the rows' ids with the tables (as tables larger than an executor are), the same AUC.
    heldOut.write().parquet(dir.resolve("held-out").toString());
    CliTest.Result joined = CliTest.sparkps("predict", "--model", run.toString(), "--data",
        dir.resolve("held-out").toString(), "--tables-scoring", "join", "--output", dir.resolve("scored").toString());
    assertEquals(0, joined.code(), joined.err() + joined.out());
    assertTrue(joined.out().contains("5000 predictions"), joined.out());
    assertEquals(auc, evaluator.evaluate(spark.read().parquet(dir.resolve("scored").toString())), 1e-9);
    // A binary label is measured as click-through is: the AUC and the log loss first, and the AUC on one line.
    assertTrue(joined.out().contains(String.format(java.util.Locale.ROOT, "; auc %.4f", auc)), joined.out());
    CliTest.Result evaluated = CliTest.sparkps("evaluate", "--model", run.toString(), "--data",
        dir.resolve("held-out").toString());
    assertEquals(0, evaluated.code(), evaluated.err() + evaluated.out());
    org.nd4j.shade.jackson.databind.JsonNode metrics = new org.nd4j.shade.jackson.databind.ObjectMapper()
        .readTree(evaluated.out().substring(evaluated.out().indexOf('{')));
    List<String> names = new java.util.ArrayList<>();
    metrics.fieldNames().forEachRemaining(names::add);
    assertEquals(List.of("examples", "auc", "logLoss"), names.subList(0, 3), metrics.toString());
    assertEquals(auc, metrics.path("auc").asDouble(), 1e-9);
    double logLoss = 0;
    List<org.apache.spark.sql.Row> scored = spark.read().parquet(dir.resolve("scored").toString())
        .select("label", "probability").collectAsList();
    for (org.apache.spark.sql.Row row : scored) {
      double p = ((org.apache.spark.ml.linalg.Vector) row.get(1)).apply((int) row.getDouble(0));
      logLoss -= Math.log(Math.max(p, 1e-15));
    }
    assertEquals(logLoss / scored.size(), metrics.path("logLoss").asDouble(), 1e-9, "the mean of -log p(label)");
    assertTrue(joined.out().contains(String.format(java.util.Locale.ROOT, "; auc %.4f, logLoss %.4f", auc,
        logLoss / scored.size())), joined.out());
    CliTest.assertUsage(CliTest.sparkps(dir.resolve("refused-t"), "predict", "--model", run.toString(), "--data",
        dir.resolve("held-out").toString(), "--tables-scoring", "broadcast"), "--tables-scoring broadcast: it is auto, "
        + "load or join");
    CliTest.assertUsage(CliTest.sparkps(dir.resolve("refused-e"), "train", "--data", data.toString(), "--categorical-cols", "C1,C77"),
        "--categorical-cols: column 'C77' is not in the data");
    CliTest.assertUsage(CliTest.sparkps(dir.resolve("refused-o"), "train", "--data", data.toString(), "--categorical-cols", "C1",
        "--embedding-optimizer", "ADAM"), "--embedding-*", "optimizer ADAM is one of dense variables; a table's must be one of",
        "LAZY_ADAM is Adam on the rows a step touches");
    CliTest.assertUsage(CliTest.sparkps(dir.resolve("refused-w"), "train", "--data", data.toString(), "--feature-cols", "I1,I2",
        "--wide"), "--wide is set without --categorical-cols: it belongs to an embedding model; set --categorical-cols, or unset it");
  }
}
