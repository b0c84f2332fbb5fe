package io.sparkps.ml;

import java.io.Serializable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Where a spec's data comes from, as tf-yarn's {@code input_fn}: a function of the session, run
 * in the driver that trains (which may be a YARN container), so it must be serializable, for
 * example {@code spark -> spark.read().parquet("hdfs:///data/train")}.
 */
@FunctionalInterface
public interface InputFn extends Serializable {
  /** The DataFrame to read. */
  Dataset<Row> load(SparkSession spark);

  /**
   * Parquet at {@code path}. Unlike a lambda of your own, it deserializes wherever the shaded jar
   * runs (a lambda's class must be on the driver's class path: ship its jar).
   */
  static InputFn parquet(String path) {
    return new Files("parquet", path, null);
  }

  /** CSV with a header at {@code path}, numeric columns inferred; {@code featureCols} assembled into "features". */
  static InputFn csv(String path, String... featureCols) {
    return new Files("csv", path, featureCols.length == 0 ? null : featureCols);
  }

  /** The built-in inputs: files of a format, optionally with numeric columns assembled into "features". */
  record Files(String format, String path, String[] featureCols) implements InputFn {
    @Override
    public Dataset<Row> load(SparkSession spark) {
      Dataset<Row> data = format.equals("csv")
          ? spark.read().option("header", "true").option("inferSchema", "true").csv(path)
          : spark.read().format(format).load(path);
      return featureCols == null ? data
          : new org.apache.spark.ml.feature.VectorAssembler().setInputCols(featureCols).setOutputCol("features")
              .transform(data);
    }
  }
}
