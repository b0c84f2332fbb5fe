package io.sparkps.ml.data;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.input_file_name;
import static org.apache.spark.sql.functions.monotonically_increasing_id;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * Where each training row comes from in the user's input, carried with the row through any
 * shuffle so that a bad row is named where the user can find it: the input file (when the data
 * was read from files) and the input partition and offset before any shuffle.
 */
public final class Origins {
  /** The input partition (upper 31 bits) and the offset in it (lower 33), as Spark's monotonically_increasing_id. */
  public static final String ROW = "__sparkps_origin_row";
  /** The input file, or "" when the row was not read from a file. */
  public static final String FILE = "__sparkps_origin_file";

  private Origins() {}

  /** {@code featuresCol} and {@code labelCol} of {@code data}, each row tagged with its origin (before any shuffle). */
  public static Dataset<Row> tag(Dataset<?> data, String featuresCol, String labelCol) {
    return data.toDF().select(col(featuresCol), col(labelCol), monotonically_increasing_id().as(ROW),
        input_file_name().as(FILE));
  }

  /** A row's place, for messages: its origin when it carries one, else its offset in {@code partition} here. */
  static String describe(Row row, int rowAt, int fileAt, long offset, int partition) {
    if (rowAt < 0) {
      return partition < 0 ? "row " + offset : "row " + offset + " of partition " + partition;
    }
    long id = row.getLong(rowAt);
    String file = fileAt < 0 || row.isNullAt(fileAt) ? "" : row.getString(fileAt);
    String where = "row " + (id & ((1L << 33) - 1)) + " of input partition " + (id >>> 33);
    return file.isEmpty() ? where : where + " (read from " + file + ")";
  }
}
