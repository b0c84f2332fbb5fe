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

  @Test
  void theTrainingSet_isReadOnTheExecutors_inSmallTasks_withoutAShuffle() throws IOException {
    Dataset<Row> train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 4);
    java.util.List<String> warnings = io.sparkps.ml.TaskSizeWarnings.during(() -> assertEquals(60000, train.count()));
    assertEquals(java.util.List.of(), warnings, "no task carries the data");
    assertEquals(4, train.rdd().getNumPartitions());
    assertTrue(!train.queryExecution().executedPlan().toString().contains("Exchange"),
        "no shuffle: " + train.queryExecution().executedPlan());
    // The items are the file's, in order: item 0 of the training set is an ankle boot (label 9).
    assertEquals(9.0, train.head().getDouble(1));
    // The check can fail: a task that carries 5 MB is warned about.
    java.util.List<Double> heavy = new java.util.ArrayList<>(java.util.Collections.nCopies(700_000, 1.0));
    java.util.List<String> warned = io.sparkps.ml.TaskSizeWarnings.during(() -> org.apache.spark.api.java.JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(heavy, 1).count());
    assertEquals(1, warned.size(), warned.toString());
  }

  /** The first items of the files, in ranges: the full read's first rows, in order, with no shuffle. */
  @Test
  void theFirstItems_inRangesOfTheFile_areTheFullReadsFirstRows_withoutAShuffle() throws IOException {
    Dataset<Row> first = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 2, 1001);
    assertEquals(java.util.List.of(500, 501), first.javaRDD().glom().collect().stream().map(java.util.List::size).toList());
    assertTrue(!first.queryExecution().executedPlan().toString().contains("Exchange"),
        "no shuffle: " + first.queryExecution().executedPlan());
    java.util.List<Row> all = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 1).limit(1001)
        .collectAsList();
    assertEquals(all, first.collectAsList());
    assertEquals(10000, IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 3, 20000).count(),
        "more items than the files hold: all of them");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 2, 0));
    assertTrue(e.getMessage().startsWith("items must be >= 1"), e.getMessage());
  }

  /** The generated stand-in for Fashion-MNIST: the rows, partitions, labels, pixel range and seeding asked for. */
  @Test
  void prototypes_haveTheRowsPartitionsLabelsAndRangeAsked() {
    Dataset<Row> df = Prototypes.dataFrame(spark, 103, 5, 3, 0.2);
    java.util.List<java.util.List<Row>> parts = df.javaRDD().glom().collect();
    assertEquals(java.util.List.of(34, 34, 35), parts.stream().map(java.util.List::size).toList());
    java.util.List<Row> rows = df.collectAsList();
    int clipped = 0;
    for (int r = 0; r < rows.size(); r++) {
      assertEquals(r % 10, rows.get(r).getDouble(1), "label of row " + r);
      double[] x = ((Vector) rows.get(r).get(0)).toArray();
      assertEquals(784, x.length);
      for (double v : x) {
        assertTrue(v >= 0 && v <= 1, "pixel " + v);
        clipped += v == 0 || v == 1 ? 1 : 0;
      }
    }
    assertTrue(clipped > 100, "noise is clipped to [0, 1]: " + clipped + " pixels at an end");
    assertEquals(rows, Prototypes.dataFrame(spark, 103, 5, 3, 0.2).collectAsList(), "the same seed, the same rows");
    assertTrue(!rows.get(7).equals(Prototypes.dataFrame(spark, 103, 6, 3, 0.2).collectAsList().get(7)),
        "another seed, other rows");
    java.util.List<Row> clean = Prototypes.dataFrame(spark, 20, 5, 2, 0).collectAsList();
    assertEquals(clean.get(3).get(0), clean.get(13).get(0), "without noise, a class's rows are its prototype");
    assertTrue(!clean.get(3).get(0).equals(clean.get(4).get(0)), "classes have their own prototypes");
  }
}
