package io.sparkps.ml.data;

import java.util.Iterator;
import java.util.List;
import java.util.Random;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Row;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One worker's partition, materialized once into compact float storage, served as shuffled
 * minibatches (seeded) for as many epochs as asked. Bad rows fail when read, naming the
 * partition, the row's offset in it, the column and the fix; nothing is skipped.
 */
public final class Minibatches {
  private final float[] features;
  private final int[] labels;
  private final int rows;
  private final int width;
  private final int classes;

  private Minibatches(float[] features, int[] labels, int rows, int width, int classes) {
    this.features = features;
    this.labels = labels;
    this.rows = rows;
    this.width = width;
    this.classes = classes;
  }

  /**
   * Reads rows with a vector (or array of numbers) column {@code featuresCol} of {@code width}
   * values and a class-index column {@code labelCol} in [0, classes).
   */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      int classes) {
    FloatBuffer features = new FloatBuffer();
    IntBuffer labels = new IntBuffer();
    int offset = 0;
    while (data.hasNext()) {
      Row row = data.next();
      String where = "row " + offset + " of partition " + partition;
      appendFeatures(features, row, featuresCol, width, where);
      labels.add(label(row, labelCol, classes, where));
      offset++;
    }
    return new Minibatches(features.toArray(), labels.toArray(), offset, width, classes);
  }

  private static void appendFeatures(FloatBuffer out, Row row, String col, int width, String where) {
    Object value = row.get(row.fieldIndex(col));
    if (value == null) {
      throw new IllegalArgumentException("column '" + col + "' is null in " + where + ": drop or fill such rows first");
    }
    int size;
    if (value instanceof Vector v) {
      size = v.size();
      check(col, size, width, where);
      double[] dense = v.toArray();
      for (double d : dense) {
        out.add(finite(col, d, where));
      }
    } else if (value instanceof scala.collection.Seq<?> seq) {
      List<?> list = scala.collection.JavaConverters.seqAsJavaList(seq);
      size = list.size();
      check(col, size, width, where);
      for (Object o : list) {
        if (!(o instanceof Number n)) {
          throw new IllegalArgumentException("column '" + col + "' holds " + o + " in " + where + "; expected numbers");
        }
        out.add(finite(col, n.doubleValue(), where));
      }
    } else {
      throw new IllegalArgumentException("column '" + col + "' is a " + value.getClass().getSimpleName() + " in " + where
          + "; expected an ml.linalg.Vector or an array of floats or doubles (use a VectorAssembler)");
    }
  }

  private static void check(String col, int size, int width, String where) {
    if (size != width) {
      throw new IllegalArgumentException("column '" + col + "' has " + size + " values in " + where + " but the network "
          + "takes " + width + ": every feature vector must have the network's input size");
    }
  }

  private static float finite(String col, double d, String where) {
    if (!Double.isFinite(d)) {
      throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + ": clean or impute it first");
    }
    return (float) d;
  }

  private static int label(Row row, String col, int classes, String where) {
    Object value = row.get(row.fieldIndex(col));
    if (!(value instanceof Number n)) {
      throw new IllegalArgumentException("column '" + col + "' holds " + value + " in " + where
          + "; expected a class index (use a StringIndexer for string labels)");
    }
    double d = n.doubleValue();
    if (d != Math.rint(d) || d < 0 || d >= classes) {
      throw new IllegalArgumentException("column '" + col + "' holds " + d + " in " + where + " but the output layer has "
          + classes + " classes: labels must be whole numbers in [0, " + classes + ")");
    }
    return (int) d;
  }

  /** The features, row after row (the backing array; do not modify). */
  public float[] features() {
    return features;
  }

  /** The class indexes, by row (the backing array; do not modify). */
  public int[] labels() {
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
      private int step;
      private int next;

      @Override
      public boolean hasNext() {
        return step < steps;
      }

      @Override
      public DataSet next() {
        float[] x = new float[batchSize * width];
        float[] y = new float[batchSize * classes];
        for (int b = 0; b < batchSize; b++) {
          int r = order[next];
          next = (next + 1) % rows;
          System.arraycopy(features, r * width, x, b * width, width);
          y[b * classes + labels[r]] = 1f;
        }
        step++;
        return new DataSet(Nd4j.create(x, new long[] {batchSize, width}, 'c'),
            Nd4j.create(y, new long[] {batchSize, classes}, 'c'));
      }
    };
  }

  /** A growable float array. */
  private static final class FloatBuffer {
    private float[] a = new float[1 << 16];
    private int n;

    void add(float v) {
      if (n == a.length) {
        a = java.util.Arrays.copyOf(a, a.length * 2);
      }
      a[n++] = v;
    }

    float[] toArray() {
      return java.util.Arrays.copyOf(a, n);
    }
  }

  /** A growable int array. */
  private static final class IntBuffer {
    private int[] a = new int[1 << 12];
    private int n;

    void add(int v) {
      if (n == a.length) {
        a = java.util.Arrays.copyOf(a, a.length * 2);
      }
      a[n++] = v;
    }

    int[] toArray() {
      return java.util.Arrays.copyOf(a, n);
    }
  }
}
