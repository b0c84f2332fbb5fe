package io.sparkps.ml.data;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
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
   * features multiplied by {@code scale} (e.g. 1/255 for pixels). Only the headers are read here;
   * each partition's task reads its range of items where the files lie, so the files must be
   * readable from the executors (as for any Spark reader).
   */
  public static Dataset<Row> read(SparkSession spark, Path images, Path labels, double scale, int partitions)
      throws IOException {
    return read(spark, images.toUri().toString(), labels.toUri().toString(), scale, partitions);
  }

  /** {@link #read(SparkSession, Path, Path, double, int)} of files named by Hadoop paths or URIs. */
  public static Dataset<Row> read(SparkSession spark, String images, String labels, double scale, int partitions)
      throws IOException {
    return read(spark, images, labels, scale, partitions, Long.MAX_VALUE);
  }

  /**
   * As above, of the files' first {@code items} items only (all of them when they hold fewer), in
   * {@code partitions} ranges: the same rows whenever a partition is computed again (after an
   * executor that cached it was lost), with no shuffle. A {@code limit} of the whole frame takes
   * rows in the order its partitions' blocks arrive, and repartitioning it adds a shuffle.
   */
  public static Dataset<Row> read(SparkSession spark, String images, String labels, double scale, int partitions,
      long items) throws IOException {
    if (items < 1) {
      throw new IllegalArgumentException("items must be >= 1 (the number of the files' first items to read), got "
          + items);
    }
    IdxRanges.Header x = IdxRanges.header(images);
    IdxRanges.Header y = IdxRanges.header(labels);
    if (x.items() != y.items()) {
      throw new IOException(images + " holds " + x.items() + " items but " + labels + " holds " + y.items()
          + " labels: they must come from the same set");
    }
    if (y.itemLength() != 1) {
      throw new IOException(labels + " has " + y.itemLength() + " values per item; a label file has one");
    }
    if (partitions < 1) {
      throw new IllegalArgumentException("partitions must be >= 1, got " + partitions);
    }
    long n = Math.min(items, x.items());
    List<long[]> ranges = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      ranges.add(new long[] {p * n / partitions, (p + 1) * n / partitions});
    }
    JavaRDD<Row> rows = JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(ranges, partitions)
        .mapPartitions(it -> it.hasNext() ? new Items(x, y, scale, it.next()) : java.util.Collections.emptyIterator());
    return spark.createDataFrame(rows, schema());
  }

  /** The rows of one range of items, read one at a time; the files close at the end or with the task. */
  private static final class Items implements java.util.Iterator<Row> {
    private final IdxRanges.Reader images;
    private final IdxRanges.Reader labels;
    private final double scale;
    private final int length;
    private long next;
    private final long end;

    Items(IdxRanges.Header x, IdxRanges.Header y, double scale, long[] range) throws IOException {
      this.images = new IdxRanges.Reader(x, range[0]);
      this.labels = new IdxRanges.Reader(y, range[0]);
      this.scale = scale;
      this.length = x.itemLength();
      this.next = range[0];
      this.end = range[1];
      org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) t -> close());
      }
    }

    @Override
    public boolean hasNext() {
      if (next < end) {
        return true;
      }
      close();
      return false;
    }

    @Override
    public Row next() {
      if (!hasNext()) {
        throw new java.util.NoSuchElementException();
      }
      double[] features = new double[length];
      double[] label = new double[1];
      try {
        images.read(features, scale);
        labels.read(label, 1);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      next++;
      return RowFactory.create(Vectors.dense(features), label[0]);
    }

    private void close() {
      try {
        images.close();
        labels.close();
      } catch (IOException e) {
        // reading is over: nothing to release beyond the streams
      }
    }
  }

  /** Fashion-MNIST's training ({@code train}) or test ({@code t10k}) set from {@code dir}, pixels scaled to [0, 1]. */
  public static Dataset<Row> fashionMnist(SparkSession spark, Path dir, String set, int partitions) throws IOException {
    return fashionMnist(spark, dir, set, partitions, Long.MAX_VALUE);
  }

  /** As above, its first {@code items} images only ({@link #read(SparkSession, String, String, double, int, long)}). */
  public static Dataset<Row> fashionMnist(SparkSession spark, Path dir, String set, int partitions, long items)
      throws IOException {
    Path images = dir.resolve(set + "-images-idx3-ubyte.gz");
    if (!Files.exists(images)) {
      throw new IOException("Fashion-MNIST is not at " + dir + " (no " + images.getFileName()
          + "): install it with 'apt-get install dataset-fashion-mnist', or pass the folder holding the IDX files");
    }
    return read(spark, images.toUri().toString(), dir.resolve(set + "-labels-idx1-ubyte.gz").toUri().toString(),
        1.0 / 255, partitions, items);
  }
}
