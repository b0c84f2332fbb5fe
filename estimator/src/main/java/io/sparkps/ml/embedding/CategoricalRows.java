package io.sparkps.ml.embedding;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;
import org.apache.spark.sql.Row;

/**
 * Rows of an embedding model's input held in primitive arrays: each row's keys per categorical
 * column (one for a single id, any number for an array column; a missing value is one key, the
 * column's missing row), its numeric values and its label. 8 bytes a key, 4 a column's start, 4 a
 * value: 26 categorical and 13 numeric columns and a label take 368 bytes a row.
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

  /** Bytes the rows take in the arrays (their length in use, not their capacity). */
  public long usedBytes() {
    return 8L * keyCount + 4L * ((long) rows * (fields + numeric + labelWidth) + 1);
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

  /** Appends row {@code r} of {@code from}, rows of the same inputs and label width. */
  public void append(CategoricalRows from, int r) {
    int base = rows * fields;
    if (base + fields + 1 > starts.length) {
      starts = Arrays.copyOf(starts, Math.max(starts.length * 2, base + fields + 1));
    }
    int first = from.starts[r * fields];
    int count = from.starts[r * fields + fields] - first;
    if (keyCount + count > keys.length) {
      keys = Arrays.copyOf(keys, Math.max(keys.length * 2, keyCount + count));
    }
    System.arraycopy(from.keys, first, keys, keyCount, count);
    for (int c = 0; c <= fields; c++) {
      starts[base + c] = keyCount + from.starts[r * fields + c] - first;
    }
    keyCount += count;
    values = grow(values, (rows + 1) * numeric);
    System.arraycopy(from.values, r * numeric, values, rows * numeric, numeric);
    labels = grow(labels, (rows + 1) * labelWidth);
    System.arraycopy(from.labels, r * labelWidth, labels, rows * labelWidth, labelWidth);
    rows++;
  }

  /** Bytes that {@link #write} takes for rows {@code [from, to)}. */
  int writtenBytes(int from, int to) {
    int n = to - from;
    int keysIn = starts[to * fields] - starts[from * fields];
    return 8 + 4 * (n * fields + 1) + 8 * keysIn + 4 * n * (numeric + labelWidth);
  }

  /**
   * Writes rows {@code [from, to)} at {@code out}'s position: their count and their keys' count,
   * then where each row's columns start (from 0), the keys, the numeric values and the labels.
   * {@link #read} appends them back.
   */
  void write(int from, int to, ByteBuffer out) {
    int n = to - from;
    int first = starts[from * fields];
    int keyTotal = starts[to * fields] - first;
    out.putInt(n).putInt(keyTotal);
    for (int i = from * fields; i <= to * fields; i++) {
      out.putInt(starts[i] - first);
    }
    out.asLongBuffer().put(keys, first, keyTotal);
    out.position(out.position() + 8 * keyTotal);
    out.asFloatBuffer().put(values, from * numeric, n * numeric);
    out.position(out.position() + 4 * n * numeric);
    out.asFloatBuffer().put(labels, from * labelWidth, n * labelWidth);
    out.position(out.position() + 4 * n * labelWidth);
  }

  /** Appends the rows {@link #write} wrote at {@code in}'s position (of rows of the same inputs and label width). */
  void read(ByteBuffer in) {
    int n = in.getInt();
    int keyTotal = in.getInt();
    int base = rows * fields;
    if (base + n * fields + 1 > starts.length) {
      starts = Arrays.copyOf(starts, Math.max(starts.length * 2, base + n * fields + 1));
    }
    for (int i = 0; i <= n * fields; i++) {
      starts[base + i] = keyCount + in.getInt();
    }
    if (keyCount + keyTotal > keys.length) {
      keys = Arrays.copyOf(keys, Math.max(keys.length * 2, keyCount + keyTotal));
    }
    in.asLongBuffer().get(keys, keyCount, keyTotal);
    in.position(in.position() + 8 * keyTotal);
    keyCount += keyTotal;
    values = grow(values, (rows + n) * numeric);
    in.asFloatBuffer().get(values, rows * numeric, n * numeric);
    in.position(in.position() + 4 * n * numeric);
    labels = grow(labels, (rows + n) * labelWidth);
    in.asFloatBuffer().get(labels, rows * labelWidth, n * labelWidth);
    in.position(in.position() + 4 * n * labelWidth);
    rows += n;
  }

  private static float[] grow(float[] a, int size) {
    return size > a.length ? Arrays.copyOf(a, Math.max(a.length * 2, size)) : a;
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
