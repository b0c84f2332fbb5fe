package io.sparkps.ml.scoring;

import java.lang.reflect.Method;
import java.util.Optional;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * A DataFrame's rows in Spark's internal form, and a DataFrame made of such rows: how a stage maps a
 * frame's rows without turning every column into Java objects and back. Spark 3.5 and 4 both have
 * the two calls ({@code Dataset.queryExecution().toRdd()}, {@code SparkSession.internalCreateDataFrame})
 * on their classic classes, which Spark 4's API classes do not declare, so they are found by name;
 * where they are not found, callers map external rows instead.
 */
public final class InternalFrames {
  private InternalFrames() {}

  /** The frame's rows as Spark's internal rows, or empty when this Spark does not give them. */
  @SuppressWarnings("unchecked")
  public static Optional<RDD<InternalRow>> rows(Dataset<?> frame) {
    try {
      Object execution = frame.getClass().getMethod("queryExecution").invoke(frame);
      return Optional.of((RDD<InternalRow>) execution.getClass().getMethod("toRdd").invoke(execution));
    } catch (ReflectiveOperationException | ClassCastException e) {
      return Optional.empty();
    }
  }

  /** A frame of {@code schema} made of {@code rows}, or empty when this Spark does not make one. */
  @SuppressWarnings("unchecked")
  public static Optional<Dataset<Row>> frame(SparkSession session, RDD<InternalRow> rows, StructType schema) {
    try {
      Method create = session.getClass().getMethod("internalCreateDataFrame", RDD.class, StructType.class,
          boolean.class);
      return Optional.of((Dataset<Row>) create.invoke(session, rows, schema, false));
    } catch (ReflectiveOperationException | ClassCastException e) {
      return Optional.empty();
    }
  }
}
