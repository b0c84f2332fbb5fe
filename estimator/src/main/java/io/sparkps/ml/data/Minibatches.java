package io.sparkps.ml.data;

import java.nio.ByteOrder;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Row;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One worker's partition, materialized once into compact float storage, served as shuffled
 * minibatches (seeded) for as many epochs as asked. Bad rows fail when read, naming the
 * partition, the row's offset in it, the column and the fix; nothing is skipped.
 */
public final class Minibatches {
  private final float[] features;
  private final float[] labels;
  private final int rows;
  private final int width;
  private final int outputs;

  private Minibatches(float[] features, float[] labels, int rows, int width, int outputs) {
    this.features = features;
    this.labels = labels;
    this.rows = rows;
    this.width = width;
    this.outputs = outputs;
  }

  /**
   * Reads rows with a vector (or array of numbers) column {@code featuresCol} of {@code width}
   * values and a label column {@code labelCol} of {@code kind} for a network of {@code outputs}
   * output units.
   */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      LabelKind kind, int outputs) {
    FloatBuffer features = new FloatBuffer();
    FloatBuffer labels = new FloatBuffer();
    int offset = 0;
    int featuresAt = -1;
    int labelAt = -1;
    int originAt = -1;
    int fileAt = -1;
    while (data.hasNext()) {
      Row row = data.next();
      if (featuresAt < 0) {
        featuresAt = row.fieldIndex(featuresCol);
        labelAt = row.fieldIndex(labelCol);
        java.util.List<String> fields = java.util.Arrays.asList(row.schema() == null ? new String[0] : row.schema().fieldNames());
        originAt = fields.indexOf(Origins.ROW);
        fileAt = fields.indexOf(Origins.FILE);
      }
      Where where = new Where(row, originAt, fileAt, offset, partition);
      appendFeatures(features, row.get(featuresAt), featuresCol, width, where);
      appendLabel(labels, row.get(labelAt), labelCol, kind, outputs, where);
      offset++;
    }
    return new Minibatches(features.toArray(), labels.toArray(), offset, width, outputs);
  }

  /** A row's place, for messages (built into text only when one is needed): its origin in the input when tagged. */
  private record Where(Row row, int originAt, int fileAt, int offset, int partition) {
    @Override
    public String toString() {
      return Origins.describe(row, originAt, fileAt, offset, partition);
    }
  }

  /** {@link #of(Iterator, int, String, String, int, LabelKind, int)} with class-index labels. */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      int classes) {
    return of(data, partition, featuresCol, labelCol, width, LabelKind.CLASS_INDEX, classes);
  }

  private static void appendFeatures(FloatBuffer out, Object value, String col, int width, Where where) {
    if (value == null) {
      throw new IllegalArgumentException("column '" + col + "' is null in " + where + ": drop or fill such rows first");
    }
    if (value instanceof Number) {
      throw new IllegalArgumentException("column '" + col + "' is a single number in " + where
          + "; expected an ml.linalg.Vector or an array of floats or doubles (use a VectorAssembler)");
    }
    double[] values = numbers(value, col, where);
    check(col, values.length, width, where);
    float[] a = out.reserve(values.length);
    int at = out.size();
    for (int i = 0; i < values.length; i++) {
      a[at + i] = (float) values[i];
    }
    for (int i = 0; i < values.length; i++) {
      // NaN and infinity survive the cast, so one branch-light pass over the floats finds them
      if (!Float.isFinite(a[at + i])) {
        finite(col, values[i], where);
        throw new IllegalArgumentException("column '" + col + "' holds " + values[i] + " in " + where
            + ", beyond the float32 range the network computes in: scale the features first");
      }
    }
    out.advance(values.length);
  }

  private static void check(String col, int size, int width, Where where) {
    if (size != width) {
      throw new IllegalArgumentException("column '" + col + "' has " + size + " values in " + where + " but the network "
          + "takes " + width + ": every feature vector must have the network's input size");
    }
  }

  private static float finite(String col, double d, Where where) {
    if (!Double.isFinite(d)) {
      throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + ": clean or impute it first");
    }
    return (float) d;
  }

  private static void appendLabel(FloatBuffer out, Object value, String col, LabelKind kind, int outputs, Where where) {
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
        out.add(c == (int) d ? 1f : 0f);
      }
      return;
    }
    double[] values = numbers(value, col, where);
    if (values.length != outputs) {
      throw new IllegalArgumentException("column '" + col + "' has " + values.length + " values in " + where + " but the "
          + "output layer has " + outputs + " units: the label must have one value per output unit");
    }
    double sum = 0;
    for (double d : values) {
      float f = finite(col, d, where);
      if (kind == LabelKind.ONE_HOT && (d < 0 || d > 1)) {
        throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + ": class probabilities "
            + "(one-hot labels) must lie in [0, 1]");
      }
      sum += d;
      out.add(f);
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

  /** The features, row after row (the backing array; do not modify). */
  public float[] features() {
    return features;
  }

  /** The labels, a row of the output width per example (the backing array; do not modify). */
  public float[] labels() {
    return labels;
  }

  /** Rows in this partition. */
  public int size() {
    return rows;
  }

  /**
   * The minibatches of one epoch: {@code steps} batches of {@code batchSize} rows drawn from a
   * shuffle seeded by {@code seed} and the epoch, wrapping around when the partition is smaller.
   */
  public Iterator<DataSet> epoch(int epoch, int steps, int batchSize, long seed) {
    return epoch(epoch, 0, steps, batchSize, seed);
  }

  /**
   * The minibatches of one epoch from step {@code from} on (a resumed run continues mid-epoch with
   * the batches it would have had).
   */
  public Iterator<DataSet> epoch(int epoch, int from, int steps, int batchSize, long seed) {
    if (rows == 0) {
      throw new IllegalStateException("this worker's partition is empty; repartition the data or use fewer workers");
    }
    int[] order = new int[rows];
    for (int i = 0; i < rows; i++) {
      order[i] = i;
    }
    Random random = new Random(seed * 31 + epoch);
    for (int i = rows - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return new Iterator<>() {
      private int step = from;
      private int next = (int) ((long) from * batchSize % rows);

      @Override
      public boolean hasNext() {
        return step < steps;
      }

      @Override
      public DataSet next() {
        INDArray x = Nd4j.createUninitialized(DataType.FLOAT, new long[] {batchSize, width}, 'c');
        INDArray y = Nd4j.createUninitialized(DataType.FLOAT, new long[] {batchSize, outputs}, 'c');
        java.nio.FloatBuffer xs = floats(x);
        java.nio.FloatBuffer ys = floats(y);
        for (int b = 0; b < batchSize; b++) {
          int r = order[next];
          next = (next + 1) % rows;
          xs.put(features, r * width, width);
          ys.put(labels, r * outputs, outputs);
        }
        step++;
        return new DataSet(x, y);
      }
    };
  }

  /** The array's own memory as floats (written in bulk, not element by element). */
  private static java.nio.FloatBuffer floats(INDArray a) {
    return a.data().asNio().order(ByteOrder.nativeOrder()).asFloatBuffer();
  }

  /** A growable float array. */
  private static final class FloatBuffer {
    private float[] a = new float[1 << 16];
    private int n;

    void add(float v) {
      reserve(1)[n++] = v;
    }

    /** The backing array, with room for {@code more} values after {@link #size()}. */
    float[] reserve(int more) {
      if (n + more > a.length) {
        a = java.util.Arrays.copyOf(a, Math.max(a.length * 2, n + more));
      }
      return a;
    }

    int size() {
      return n;
    }

    void advance(int count) {
      n += count;
    }

    float[] toArray() {
      return java.util.Arrays.copyOf(a, n);
    }
  }
}
