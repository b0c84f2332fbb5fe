package io.sparkps.ml.data;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Row;

/**
 * Turns training rows into float32 records (the features, then the label's output units), checking
 * every value: a bad row fails naming where it is in the user's input, the column, the value and
 * the fix. Nothing is skipped.
 */
final class RowDecoder {
  private final String featuresCol;
  private final String labelCol;
  private final int width;
  private final LabelKind kind;
  private final int outputs;
  private final int partition;
  private int featuresAt = -1;
  private int labelAt = -1;
  private int originAt = -1;
  private int fileAt = -1;

  RowDecoder(int partition, String featuresCol, String labelCol, int width, LabelKind kind, int outputs) {
    this.partition = partition;
    this.featuresCol = featuresCol;
    this.labelCol = labelCol;
    this.width = width;
    this.kind = kind;
    this.outputs = outputs;
  }

  /** Floats per record. */
  int recordFloats() {
    return width + outputs;
  }

  /** Writes row {@code offset} (its offset in this partition) into {@code record}. */
  void decode(Row row, long offset, float[] record) {
    if (featuresAt < 0) {
      featuresAt = row.fieldIndex(featuresCol);
      labelAt = row.fieldIndex(labelCol);
      List<String> fields = Arrays.asList(row.schema() == null ? new String[0] : row.schema().fieldNames());
      originAt = fields.indexOf(Origins.ROW);
      fileAt = fields.indexOf(Origins.FILE);
    }
    Where where = new Where(row, originAt, fileAt, offset, partition);
    features(record, row.get(featuresAt), where);
    label(record, row.get(labelAt), where);
  }

  /** A row's place, for messages (built into text only when one is needed): its origin in the input when tagged. */
  private record Where(Row row, int originAt, int fileAt, long offset, int partition) {
    @Override
    public String toString() {
      return Origins.describe(row, originAt, fileAt, offset, partition);
    }
  }

  private void features(float[] out, Object value, Where where) {
    String col = featuresCol;
    if (value == null) {
      throw new IllegalArgumentException("column '" + col + "' is null in " + where + ": drop or fill such rows first");
    }
    if (value instanceof Number) {
      throw new IllegalArgumentException("column '" + col + "' is a single number in " + where
          + "; expected an ml.linalg.Vector or an array of floats or doubles (use a VectorAssembler)");
    }
    double[] values = numbers(value, col, where);
    if (values.length != width) {
      throw new IllegalArgumentException("column '" + col + "' has " + values.length + " values in " + where
          + " but the network takes " + width + ": every feature vector must have the network's input size");
    }
    for (int i = 0; i < width; i++) {
      out[i] = (float) values[i];
    }
    for (int i = 0; i < width; i++) {
      // NaN and infinity survive the cast, so one branch-light pass over the floats finds them
      if (!Float.isFinite(out[i])) {
        finite(col, values[i], where);
        throw new IllegalArgumentException("column '" + col + "' holds " + values[i] + " in " + where
            + ", beyond the float32 range the network computes in: scale the features first");
      }
    }
  }

  private static float finite(String col, double d, Where where) {
    if (!Double.isFinite(d)) {
      throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + ": clean or impute it first");
    }
    return (float) d;
  }

  private void label(float[] out, Object value, Where where) {
    String col = labelCol;
    if (value == null) {
      throw new IllegalArgumentException("column '" + col + "' is null in " + where + ": drop or fill such rows first");
    }
    if (kind == LabelKind.CLASS_INDEX) {
      if (!(value instanceof Number n)) {
        throw new IllegalArgumentException("column '" + col + "' holds " + value + " in " + where
            + "; expected a class index (use a StringIndexer for string labels)");
      }
      double d = n.doubleValue();
      if (d != Math.rint(d) || d < 0 || d >= outputs) {
        throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + " but the output layer "
            + "has " + outputs + " classes: labels must be whole numbers in [0, " + outputs + ")");
      }
      for (int c = 0; c < outputs; c++) {
        out[width + c] = c == (int) d ? 1f : 0f;
      }
      return;
    }
    double[] values = numbers(value, col, where);
    if (values.length != outputs) {
      throw new IllegalArgumentException("column '" + col + "' has " + values.length + " values in " + where + " but the "
          + "output layer has " + outputs + " units: the label must have one value per output unit");
    }
    double sum = 0;
    for (int i = 0; i < outputs; i++) {
      double d = values[i];
      float f = finite(col, d, where);
      if (kind == LabelKind.ONE_HOT && (d < 0 || d > 1)) {
        throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + ": class probabilities "
            + "(one-hot labels) must lie in [0, 1]");
      }
      sum += d;
      out[width + i] = f;
    }
    if (kind == LabelKind.ONE_HOT && Math.abs(sum - 1) > 1e-3) {
      throw new IllegalArgumentException("column '" + col + "' sums to " + sum + " in " + where + ": a one-hot (or "
          + "class probability) label must sum to 1");
    }
  }

  private static double[] numbers(Object value, String col, Where where) {
    if (value instanceof Number n) {
      return new double[] {n.doubleValue()};
    }
    if (value instanceof Vector v) {
      return v.toArray();
    }
    if (value instanceof scala.collection.Seq<?> seq) {
      List<?> list = scala.collection.JavaConverters.seqAsJavaList(seq);
      double[] out = new double[list.size()];
      for (int i = 0; i < out.length; i++) {
        if (!(list.get(i) instanceof Number n)) {
          throw new IllegalArgumentException("column '" + col + "' holds " + list.get(i) + " in " + where
              + "; expected numbers");
        }
        out[i] = n.doubleValue();
      }
      return out;
    }
    throw new IllegalArgumentException("column '" + col + "' is a " + value.getClass().getSimpleName() + " in " + where
        + "; expected a number, an ml.linalg.Vector or an array of numbers");
  }
}
