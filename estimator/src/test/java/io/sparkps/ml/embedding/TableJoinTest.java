package io.sparkps.ml.embedding;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.LocalSpark;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.spec.Consistency;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * An embedding model scored by the join of its rows' ids with its tables (what tables larger than an
 * executor take) scores every row as the model whose tables each executor loads: string, long and
 * array columns (mean-pooled, hashed), ids never seen or never admitted (each reading the default
 * row of the ps it would live on, of two), missing values, the wide part and the factorization
 * term; the rows keep their order and columns. An input that gives other rows each time it is read
 * (a UDF drawing random ids) fails naming the fix.
 */
class TableJoinTest {
  private static SparkSession spark;
  private static Dl4jModel model;

  @BeforeAll
  static void fit() {
    spark = LocalSpark.start(3, "table-join-test");
    List<EmbeddingColumn> columns = List.of(
        EmbeddingColumn.of("item", 4).withOptimizer("ADAGRAD", 0.1).withMinCount(2),
        EmbeddingColumn.of("user", 4).withOptimizer("ADAGRAD", 0.1).withMinCount(3),
        EmbeddingColumn.of("tags", 4).withOptimizer("ADAGRAD", 0.1).withBuckets(40)
            .withPooling(EmbeddingColumn.Pooling.MEAN));
    int width = 3 * 4 + 1 + 3 + 1; // embeddings, x, the wide weights, the factorization term
    String network = new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(5e-3)).list()
        .layer(new DenseLayer.Builder().nIn(width).nOut(8).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(8).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    model = new Dl4jEstimator().setEmbeddingColumns(columns, "x").setWidePart(true).setFactorizationTerm(true)
        .setNetworkJson(network).setNumWorkers(1).setNumPs(2).setBatchSize(64).setEpochs(2)
        .setConsistency(Consistency.SYNC).setSeed(1).fit(rows(0, 4000, 2));
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  /**
   * Rows {@code first ..}: items of 300 (some seen once), users of 3,000 (most seen too rarely to
   * be admitted, and new ones past the training range), tags arrays (null, empty or with a null
   * among them now and then) and a label the item and the tags tell.
   */
  private static Dataset<Row> rows(long first, long count, int partitions) {
    Column id = functions.col("id");
    Column item = id.multiply(7919).mod(300);
    Column tags = functions.when(id.mod(10).equalTo(0), functions.lit(null).cast("array<bigint>"))
        .when(id.mod(10).equalTo(1), functions.array().cast("array<bigint>"))
        .when(id.mod(10).equalTo(2), functions.array(id.mod(13), functions.lit(null).cast("bigint")))
        .otherwise(functions.array(id.mod(13), id.mod(17), id.mod(7).plus(100)));
    return spark.range(first, first + count, 1, partitions).select(
        functions.concat(functions.lit("i"), item.cast("string")).as("item"),
        functions.when(id.mod(11).equalTo(0), functions.lit(null).cast("bigint")).otherwise(id.multiply(31).mod(
            first == 0 ? 3000 : 6000)).as("user"),
        tags.as("tags"),
        functions.sin(id).as("x"),
        functions.when(item.lt(150).or(id.mod(13).lt(4)), 1.0).otherwise(0.0).as("label"));
  }

  @Test
  void theJoin_scoresEveryRowAsTheLoadedTables_inTheInputsOrder() {
    Dataset<Row> test = rows(100_000, 3000, 3).cache();
    List<Row> loaded = model.copy(new org.apache.spark.ml.param.ParamMap()).setTablesScoring("load").transform(test)
        .collectAsList();
    List<Row> joined = model.copy(new org.apache.spark.ml.param.ParamMap()).setTablesScoring("join").transform(test)
        .collectAsList();
    List<Row> input = test.collectAsList();
    assertEquals(3000, joined.size());
    int differentFromFirst = 0;
    for (int i = 0; i < joined.size(); i++) {
      Row l = loaded.get(i);
      Row j = joined.get(i);
      for (int c = 0; c < input.get(i).length(); c++) {
        assertEquals(input.get(i).get(c), j.get(c), "row " + i + " column " + c + " kept in place");
      }
      double[] lp = ((org.apache.spark.ml.linalg.Vector) l.getAs("probability")).toArray();
      double[] jp = ((org.apache.spark.ml.linalg.Vector) j.getAs("probability")).toArray();
      assertEquals(lp[1], jp[1], 1e-6, "row " + i + " (" + input.get(i) + ") scores as with the tables loaded");
      assertEquals(l.getDouble(l.fieldIndex("prediction")), j.getDouble(j.fieldIndex("prediction")));
      differentFromFirst += Math.abs(jp[1] - ((org.apache.spark.ml.linalg.Vector) joined.get(0).getAs("probability"))
          .toArray()[1]) > 1e-4 ? 1 : 0;
    }
    assertTrue(differentFromFirst > 1000, "the rows score differently: " + differentFromFirst);
    test.unpersist();
  }

  @Test
  void anInputGivingOtherRowsEachRead_failsNamingTheFix() {
    org.apache.spark.sql.expressions.UserDefinedFunction draw = functions.udf(
        () -> java.util.concurrent.ThreadLocalRandom.current().nextLong(), org.apache.spark.sql.types.DataTypes.LongType)
        .asNondeterministic();
    Dataset<Row> drawn = rows(200_000, 500, 2).withColumn("user", draw.apply());
    Exception e = assertThrows(Exception.class,
        () -> model.copy(new org.apache.spark.ml.param.ParamMap()).setTablesScoring("join").transform(drawn).count());
    String all = messages(e);
    assertTrue(all.contains("gives other rows each time it is read") && all.contains("persist it"), all);
    Dataset<Row> kept = drawn.cache();
    assertEquals(500, model.copy(new org.apache.spark.ml.param.ParamMap()).setTablesScoring("join").transform(kept)
        .count(), "persisted, it scores");
    kept.unpersist();
  }

  @Test
  void aBloomFilterOfTheKeysAskedFor_dropsTheTablesOtherRowsWhereTheyAreRead() {
    List<Row> all = TableJoin.rows(spark, ((TableScoring) model.scoring()).tables(), null).collectAsList();
    org.apache.spark.util.sketch.BloomFilter asked = org.apache.spark.util.sketch.BloomFilter.create(10, 0.03);
    java.util.Set<Long> keys = new java.util.HashSet<>();
    for (int i = 0; i < 10; i++) {
      keys.add(all.get(i * 17).getLong(1));
      asked.putLong(all.get(i * 17).getLong(1));
    }
    List<Row> kept = TableJoin.rows(spark, ((TableScoring) model.scoring()).tables(), asked).collectAsList();
    assertTrue(all.size() > 1000, all.size() + " rows in the tables");
    assertTrue(kept.stream().map(r -> r.getLong(1)).collect(java.util.stream.Collectors.toSet()).containsAll(keys));
    assertTrue(kept.size() < 10 + all.size() / 10, kept.size() + " of " + all.size() + " rows kept for 10 keys");
  }

  @Test
  void auto_loadsTablesAnExecutorHolds_andABadModeIsRefused() {
    EmbeddingModels.Tables tables = ((TableScoring) model.scoring()).tables();
    long bytes = TableJoin.filesBytes(tables, spark);
    assertTrue(bytes > 3 * 300 * 4, "the files hold the rows: " + bytes);
    assertFalse(TableJoin.joins("auto", tables, spark), bytes + " bytes against a heap of "
        + Runtime.getRuntime().maxMemory());
    assertTrue(TableJoin.joins("join", tables, spark));
    assertFalse(TableJoin.joins("load", tables, spark));
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> model.copy(new org.apache.spark.ml.param.ParamMap()).setTablesScoring("broadcast"));
    assertTrue(messages(bad).contains("tablesScoring"), messages(bad));
  }

  private static String messages(Throwable e) {
    StringBuilder all = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append(" | ");
    }
    return all.toString();
  }
}
