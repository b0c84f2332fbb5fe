package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * A Parquet file with one known bad row (row 37), trained by 2 workers from its 1 partition, so the
 * rows are shuffled before the workers see them: every kind of bad value is named by where it is
 * in the user's input (the input partition, the row's offset in it before the shuffle, and the
 * file), with the column and the value.
 */
class BadRowsTest {
  private static final int BAD = 37;
  private static SparkSession spark;

  @TempDir
  static Path dir;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(4, "bad-rows");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static Dataset<Row> parquet(String kind) {
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      Vector features = Vectors.dense(i % 2 == 0 ? -1 : 1, i / 200.0);
      Double label = (double) (i % 2);
      if (i == BAD) {
        switch (kind) {
          case "nan" -> features = Vectors.dense(Double.NaN, 0);
          case "inf" -> features = Vectors.dense(1, Double.POSITIVE_INFINITY);
          case "null-features" -> features = null;
          case "short" -> features = Vectors.dense(1);
          case "fractional-label" -> label = 0.5;
          case "out-of-range-label" -> label = 5.0;
          case "null-label" -> label = null;
          default -> throw new IllegalArgumentException(kind);
        }
      }
      rows.add(RowFactory.create(features, label));
    }
    StructType schema = new StructType().add("features", SQLDataTypes.VectorType(), true)
        .add("label", DataTypes.DoubleType, true);
    String path = dir.resolve(kind).toString();
    spark.createDataFrame(rows, schema).coalesce(1).write().parquet(path);
    return spark.read().parquet(path);
  }

  private static String network() {
    return new NeuralNetConfiguration.Builder().seed(3).list()
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(2).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"nan", "inf", "null-features", "short", "fractional-label", "out-of-range-label", "null-label"})
  void aBadRow_isNamedByItsPlaceInTheInput_notAfterTheShuffle(String kind) {
    Dataset<Row> data = parquet(kind);
    assertTrue(data.rdd().getNumPartitions() == 1, "one input partition, shuffled to two workers");
    Exception e = assertThrows(Exception.class, () -> new Dl4jEstimator().setNetworkJson(network()).setNumWorkers(2)
        .setNumPs(1).setBatchSize(16).fit(data));
    String message = String.valueOf(e.getMessage());
    assertTrue(message.contains("row " + BAD + " of input partition 0 (read from file:"), message);
    assertTrue(message.contains(dir.resolve(kind).toString()) && message.contains(".parquet"), "the file: " + message);
    String column = kind.contains("label") ? "'label'" : "'features'";
    assertTrue(message.contains("column " + column), "the column: " + message);
    String value = switch (kind) {
      case "nan" -> "NaN";
      case "inf" -> "Infinity";
      case "null-features", "null-label" -> "null";
      case "short" -> "has 1 values";
      case "fractional-label" -> "0.5";
      default -> "5.0";
    };
    assertTrue(message.contains(value), "the value: " + message);
  }
}
