package io.sparkps.ml.data;

import java.util.List;
import java.util.Random;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;

/** A generated data set of Fashion-MNIST's shape, for the demo, tests and benchmarks without the real one. */
public final class Prototypes {
  private Prototypes() {}

  /**
   * Ten classes: fixed random 28x28 prototypes plus noise, pixel values in [0, 1]. Each partition
   * makes its own rows in its task (seeded by its index), so no task carries data.
   */
  public static Dataset<Row> dataFrame(SparkSession spark, int rows, long seed, int partitions) {
    return dataFrame(spark, rows, seed, partitions, 0.35);
  }

  /**
   * {@link #dataFrame(SparkSession, int, long, int)} with Gaussian pixel noise of standard
   * deviation {@code noise} (before clipping to [0, 1]): the larger, the harder.
   */
  public static Dataset<Row> dataFrame(SparkSession spark, int rows, long seed, int partitions, double noise) {
    List<Integer> parts = java.util.stream.IntStream.range(0, partitions).boxed().toList();
    org.apache.spark.api.java.JavaRDD<Row> data = org.apache.spark.api.java.JavaSparkContext
        .fromSparkContext(spark.sparkContext()).parallelize(parts, partitions).mapPartitions(it -> {
          int p = it.next();
          Random prototypes = new Random(7);
          double[][] proto = new double[10][784];
          for (double[] row : proto) {
            for (int i = 0; i < row.length; i++) {
              row[i] = prototypes.nextDouble();
            }
          }
          Random random = new Random(seed * 1_000_003L + p);
          return java.util.stream.IntStream.range(p * rows / partitions, (p + 1) * rows / partitions).mapToObj(r -> {
            int label = r % 10;
            double[] x = new double[784];
            for (int i = 0; i < x.length; i++) {
              x[i] = Math.min(1, Math.max(0, proto[label][i] + random.nextGaussian() * noise));
            }
            return RowFactory.create(Vectors.dense(x), (double) label);
          }).iterator();
        });
    return spark.createDataFrame(data, IdxDataFrames.schema());
  }
}
