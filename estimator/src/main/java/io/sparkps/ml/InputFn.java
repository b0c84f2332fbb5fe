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
}
