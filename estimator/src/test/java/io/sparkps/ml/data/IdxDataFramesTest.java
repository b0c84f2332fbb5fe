package io.sparkps.ml.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class IdxDataFramesTest {
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = io.sparkps.ml.LocalSpark.start(2, "idx-test");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @Test
  void fashionMnistTestSet_asAFrameOfScaledVectorsAndLabels() throws IOException {
    Dataset<Row> df = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 4);
    assertEquals(4, df.rdd().getNumPartitions());
    assertEquals(10000, df.count());
    Row first = df.head();
    Vector v = first.getAs("features");
    assertEquals(784, v.size());
    double max = df.javaRDD().map(r -> ((Vector) r.getAs("features")).toArray())
        .map(a -> java.util.Arrays.stream(a).max().orElse(0)).reduce(Math::max);
    assertTrue(max > 0.99 && max <= 1.0, "pixels scaled to [0, 1]: max " + max);
    assertEquals(10, df.select("label").distinct().count());
  }

  @Test
  void missingDataset_saysHowToInstallIt() {
    IOException e = assertThrows(IOException.class, () -> IdxDataFrames.fashionMnist(spark, Path.of("no-such-dir"), "t10k", 1));
    assertTrue(e.getMessage().contains("apt-get install dataset-fashion-mnist"), e.getMessage());
  }
}
