package io.sparkps.ml.data;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Image and label IDX files as a DataFrame with a {@code features} vector (values scaled) and a
 * {@code label} (double), the layout Spark ML estimators expect.
 */
public final class IdxDataFrames {
  /** Where Debian's {@code dataset-fashion-mnist} package puts Fashion-MNIST. */
  public static final Path FASHION_MNIST = Path.of("/usr/share/datasets/fashion-mnist");

  private IdxDataFrames() {}

  /** The schema of the frames this class makes. */
  public static StructType schema() {
    return new StructType().add("features", SQLDataTypes.VectorType(), false).add("label", DataTypes.DoubleType, false);
  }

  /**
   * Reads {@code images} and {@code labels} into a DataFrame of {@code partitions} partitions,
   * features multiplied by {@code scale} (e.g. 1/255 for pixels).
   */
  public static Dataset<Row> read(SparkSession spark, Path images, Path labels, double scale, int partitions)
      throws IOException {
    IdxFile x = IdxFile.read(images);
    IdxFile y = IdxFile.read(labels);
    if (x.items() != y.items()) {
      throw new IOException(images + " holds " + x.items() + " items but " + labels + " holds " + y.items()
          + " labels: they must come from the same set");
    }
    if (y.itemLength() != 1) {
      throw new IOException(labels + " has " + y.itemLength() + " values per item; a label file has one");
    }
    int n = x.itemLength();
    List<Row> rows = new ArrayList<>(x.items());
    for (int i = 0; i < x.items(); i++) {
      double[] features = new double[n];
      for (int j = 0; j < n; j++) {
        features[j] = x.values()[i * n + j] * scale;
      }
      rows.add(RowFactory.create(Vectors.dense(features), (double) y.values()[i]));
    }
    return spark.createDataFrame(rows, schema()).repartition(partitions);
  }

  /** Fashion-MNIST's training ({@code train}) or test ({@code t10k}) set from {@code dir}, pixels scaled to [0, 1]. */
  public static Dataset<Row> fashionMnist(SparkSession spark, Path dir, String set, int partitions) throws IOException {
    Path images = dir.resolve(set + "-images-idx3-ubyte.gz");
    if (!Files.exists(images)) {
      throw new IOException("Fashion-MNIST is not at " + dir + " (no " + images.getFileName()
          + "): install it with 'apt-get install dataset-fashion-mnist', or pass the folder holding the IDX files");
    }
    return read(spark, images, dir.resolve(set + "-labels-idx1-ubyte.gz"), 1.0 / 255, partitions);
  }
}
