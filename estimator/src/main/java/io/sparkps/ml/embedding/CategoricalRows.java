package io.sparkps.ml.embedding;

import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;
import org.apache.spark.sql.Row;

/**
 * Rows of an embedding model's input held in primitive arrays: each row's keys per categorical
 * column (one for a single id, any number for an array column; a missing value is one key, the
 * column's missing row), its numeric values and its label. About 8 bytes a key and 4 a value:
 * 26 categorical and 13 numeric columns take 260 bytes a row.
 */
public final class CategoricalRows implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private final EmbeddingInputs inputs;
  private final int fields;
  private final int numeric;
  private final io.sparkps.ml.param.NumericTransform transform;
  private final int labelWidth;
  private long[] keys = new long[1024];
  private int keyCount;
  /** Row r's keys of column c are keys[starts[r * fields + c] .. starts[r * fields + c + 1]). */
  private int[] starts = new int[1025];
  private float[] values = new float[1024];
  private float[] labels = new float[1024];
  private int rows;

  /** Empty rows of {@code inputs}, with labels {@code labelWidth} floats wide (0: rows to score). */
  public CategoricalRows(EmbeddingInputs inputs, int labelWidth) {
    this.inputs = inputs;
    this.fields = inputs.columns().size();
    this.numeric = inputs.numericCols().size();
    this.transform = inputs.numericTransform();
    this.labelWidth = labelWidth;
  }

  public EmbeddingInputs inputs() {
    return inputs;
  }

  public int size() {
    return rows;
  }

  public int labelWidth() {
    return labelWidth;
  }

  /** Row r's keys of column c start here in {@link #keys()}, and end where column c + 1's start. */
  public int start(int r, int c) {
    return starts[r * fields + c];
  }

  public int end(int r, int c) {
    return starts[r * fields + c + 1];
  }

  public long[] keys() {
    return keys;
  }

  /** Row r's numeric value j. */
  public float value(int r, int j) {
    return values[r * numeric + j];
  }

  /** Row r's label, {@code labelWidth} floats from {@code r * labelWidth}. */
  public float[] labels() {
    return labels;
  }

  /** Bytes of the arrays holding the rows (their capacity). */
  public long bytes() {
    return 8L * keys.length + 4L * (starts.length + values.length + labels.length);
  }

  /** Removes every row (the arrays are kept, for the next batch to score). */
  public void clear() {
    rows = 0;
    keyCount = 0;
  }

  /**
   * Appends {@code row}, whose input columns ({@link EmbeddingInputs#names()} order) are at
   * {@code at} and whose label is {@code label} (already {@code labelWidth} floats; ignored when 0).
   */
  public void append(Row row, int[] at, float[] label) {
    int base = rows * fields;
    if (base + fields + 1 > starts.length) {
      starts = Arrays.copyOf(starts, Math.max(starts.length * 2, base + fields + 1));
    }
    starts[base] = keyCount;
    for (int c = 0; c < fields; c++) {
      Object v = row.isNullAt(at[c]) ? null : row.get(at[c]);
      if (v instanceof scala.collection.Seq<?> seq) {
        int before = keyCount;
        List<?> ids = scala.collection.JavaConverters.seqAsJavaList(seq);
        for (Object id : ids) {
          if (id != null) {
            add(inputs.key(c, id));
          }
        }
        if (keyCount == before) {
          add(inputs.key(c, null)); // an empty or all-null array: the missing row
        }
      } else {
        add(inputs.key(c, v));
      }
      starts[base + c + 1] = keyCount;
    }
    if ((rows + 1) * numeric > values.length) {
      values = Arrays.copyOf(values, Math.max(values.length * 2, (rows + 1) * numeric));
    }
    for (int j = 0; j < numeric; j++) {
      int i = at[fields + j];
      values[rows * numeric + j] = row.isNullAt(i) ? 0f : transform.apply(((Number) row.get(i)).floatValue());
    }
    if (labelWidth > 0) {
      if ((rows + 1) * labelWidth > labels.length) {
        labels = Arrays.copyOf(labels, Math.max(labels.length * 2, (rows + 1) * labelWidth));
      }
      System.arraycopy(label, 0, labels, rows * labelWidth, labelWidth);
    }
    rows++;
  }

  private void add(long key) {
    if (keyCount == keys.length) {
      keys = Arrays.copyOf(keys, keys.length * 2);
    }
    keys[keyCount++] = key;
  }

  /**
   * Epoch {@code epoch}'s minibatches from number {@code from} on, {@code steps} in all of
   * {@code batchSize} rows each: the rows in an order drawn from {@code seed} and the epoch, from the
   * start again when the rows run out (every worker takes the same number of steps).
   */
  public Iterator<int[]> epoch(int epoch, int from, int steps, int batchSize, long seed) {
    if (rows == 0) {
      throw new IllegalStateException("no rows to train on");
    }
    int[] order = new int[rows];
    for (int i = 0; i < rows; i++) {
      order[i] = i;
    }
    Random random = new Random(seed * 1_000_003L + epoch);
    for (int i = rows - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    return new Iterator<>() {
      private int next = from;

      @Override
      public boolean hasNext() {
        return next < steps;
      }

      @Override
      public int[] next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        int[] batch = new int[batchSize];
        long first = (long) next * batchSize;
        for (int i = 0; i < batchSize; i++) {
          batch[i] = order[(int) ((first + i) % rows)];
        }
        next++;
        return batch;
      }
    };
  }
}
