package io.sparkps.ml.scoring;

import io.sparkps.ml.network.BlasThreads;
import io.sparkps.ml.network.Net;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructType;
import org.nd4j.common.util.ArrayUtil;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A model's batched inference over a partition's rows, with no parameter server. */
public final class Predictions {
  private static final Logger LOG = LoggerFactory.getLogger(Predictions.class);
  static final int BATCH = 256;

  private Predictions() {}

  /** The batch's feature vectors as one float matrix. */
  static INDArray denseInput(List<Row> batch, int featureIndex) {
    return matrix(batch.size(), i -> ArrayUtil.toFloats(features(batch.get(i).get(featureIndex))));
  }

  /** A matrix of {@code rows} rows, each the same width, filled in place (one copy into native memory). */
  private static INDArray matrix(int rows, java.util.function.IntFunction<float[]> row) {
    int width = -1;
    float[] x = null;
    for (int i = 0; i < rows; i++) {
      float[] values = row.apply(i);
      if (x == null) {
        width = values.length;
        x = new float[rows * width];
      } else if (values.length != width) {
        throw new IllegalArgumentException("row " + i + " of a scoring batch has " + values.length + " features "
            + "where the batch's first has " + width + ": every row needs the network's input width");
      }
      System.arraycopy(values, 0, x, i * width, width);
    }
    return Nd4j.create(x, new long[] {rows, width}, 'c');
  }

  /** What a row with its scores is made of: the row and the network's outputs for it. */
  interface Scored<R> {
    /**
     * The row {@code in} with its prediction columns appended: the predicted class, the class
     * probabilities and the raw outputs (a classifier's {@code p} and {@code raw}), or the predicted
     * value(s) (a regressor's {@code p}, where {@code raw} is the same array).
     */
    R row(R in, boolean classifier, float[] p, float[] raw);
  }

  /** Rows of Spark's external kind, their columns copied into a new row with the scores. */
  public static Iterator<Row> of(Iterator<Row> rows, java.util.function.Function<List<Row>, INDArray> inputs,
      String json, float[] params, Runnable done) {
    return of(rows, r -> r, inputs, (r, classifier, p, raw) -> {
      Object[] values = new Object[r.length() + (classifier ? 3 : 1)];
      for (int c = 0; c < r.length(); c++) {
        values[c] = r.get(c);
      }
      Object[] scores = scores(classifier, p, raw);
      System.arraycopy(scores, 0, values, r.length(), scores.length);
      return RowFactory.create(values);
    }, json, params, done);
  }

  /**
   * Spark's internal rows scored as they stand: the input's columns pass on in their binary form
   * (never turned into Java objects and back), the features column is read as floats, and the scores
   * join each row in one projection to the output schema {@code out}.
   */
  static Iterator<InternalRow> internal(Iterator<InternalRow> rows, int featureIndex, DataType featureType,
      StructType out, String json, float[] params) {
    VectorUDT vectors = new VectorUDT();
    UnsafeProjection project = UnsafeProjection.create(out);
    return of(rows, InternalRow::copy, batch -> internalInput(batch, featureIndex, featureType), (r, classifier, p,
        raw) -> {
      Object[] scores = scores(classifier, p, raw);
      for (int i = 0; i < scores.length; i++) {
        if (scores[i] instanceof Vector v) {
          scores[i] = vectors.serialize(v);
        }
      }
      return project.apply(new JoinedRow(r, new GenericInternalRow(scores))).copy();
    }, json, params, () -> { });
  }

  private static INDArray internalInput(List<InternalRow> batch, int featureIndex, DataType featureType) {
    VectorUDT vectors = featureType instanceof VectorUDT v ? v : null;
    DataType element = featureType instanceof ArrayType a ? a.elementType() : null;
    boolean mayHoldNulls = featureType instanceof ArrayType a && a.containsNull();
    return matrix(batch.size(), i -> vectors != null
        ? ArrayUtil.toFloats(vectors.deserialize(batch.get(i).getStruct(featureIndex, 4)).toArray())
        : floats(batch.get(i).getArray(featureIndex), element, mayHoldNulls));
  }

  /**
   * An array column's values (of any numeric type) as floats; the nulls looked for only where the
   * column's type allows them.
   */
  private static float[] floats(ArrayData array, DataType element, boolean mayHoldNulls) {
    boolean whole = !mayHoldNulls || noNulls(array);
    if (element instanceof FloatType && whole) {
      return array.toFloatArray();
    }
    if (element instanceof DoubleType && whole) {
      return ArrayUtil.toFloats(array.toDoubleArray());
    }
    float[] out = new float[array.numElements()];
    for (int j = 0; j < out.length; j++) {
      Object value = array.isNullAt(j) ? null : array.get(j, element);
      if (value instanceof Number n) {
        out[j] = n.floatValue();
      } else if (value instanceof Decimal d) {
        out[j] = d.toFloat();
      } else {
        throw new IllegalArgumentException("value " + j + " of a features array is " + value + ": the features "
            + "need a number at every position (fill or drop the rows with nulls before scoring)");
      }
    }
    return out;
  }

  private static boolean noNulls(ArrayData array) {
    for (int j = 0; j < array.numElements(); j++) {
      if (array.isNullAt(j)) {
        return false;
      }
    }
    return true;
  }

  private static Object[] scores(boolean classifier, float[] p, float[] raw) {
    if (classifier) {
      return new Object[] {(double) argMax(p), Vectors.dense(doubles(p)), Vectors.dense(doubles(raw))};
    }
    return new Object[] {p.length == 1 ? (Object) (double) p[0] : Vectors.dense(doubles(p))};
  }

  /**
   * The rows of {@code rows} with their predictions, made a batch of {@link #BATCH} at a time as
   * they are read (a task holds one batch, not its partition; {@code keep} copies a row the
   * iterator may reuse); {@code done} runs once the last is.
   */
  public static <R> Iterator<R> of(Iterator<R> rows, java.util.function.UnaryOperator<R> keep,
      java.util.function.Function<List<R>, INDArray> inputs, Scored<R> scored, String json, float[] params,
      Runnable done) {
    BlasThreads.fitToThisTask(false).ifPresent(line -> LOG.info("scoring: {}", line));
    Net net = Net.fromJson(json);
    net.setParams(params);
    boolean classifier = net.classification();
    // A classifier's raw outputs (before its output activation) come from one forward pass, and its
    // probabilities are that activation applied to a copy of them: one pass, not two.
    Net scorer = classifier ? net.withIdentityOutput() : net;
    org.nd4j.linalg.activations.IActivation activation = net.outputLayer().getActivationFn();
    return new Iterator<>() {
      private final List<R> out = new ArrayList<>(BATCH);
      private int next;

      @Override
      public boolean hasNext() {
        if (next < out.size()) {
          return true;
        }
        out.clear();
        next = 0;
        if (!rows.hasNext()) {
          done.run();
          return false;
        }
        List<R> batch = new ArrayList<>(BATCH);
        while (batch.size() < BATCH && rows.hasNext()) {
          batch.add(keep.apply(rows.next()));
        }
        INDArray output = scorer.output(inputs.apply(batch));
        float[][] raw = rowsOf(output);
        float[][] p = classifier ? rowsOf(activation.getActivation(output.dup(), false)) : raw;
        for (int i = 0; i < batch.size(); i++) {
          out.add(scored.row(batch.get(i), classifier, p[i], raw[i]));
        }
        return true;
      }

      @Override
      public R next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return out.get(next++);
      }
    };
  }

  /** Runs an action the first time it is run, and never again. */
  public static final class Once implements Runnable {
    private final Runnable action;
    private boolean ran;

    public Once(Runnable action) {
      this.action = action;
    }

    @Override
    public synchronized void run() {
      if (!ran) {
        ran = true;
        action.run();
      }
    }
  }

  /**
   * A matrix's rows, read in one copy out of native memory (ND4J's {@code toFloatMatrix} makes a view
   * and a copy of each row: a tenth of scoring's time).
   */
  static float[][] rowsOf(INDArray matrix) {
    float[] flat = matrix.dup('c').data().asFloat();
    int width = (int) matrix.size(1);
    float[][] rows = new float[(int) matrix.size(0)][];
    for (int i = 0; i < rows.length; i++) {
      rows[i] = java.util.Arrays.copyOfRange(flat, i * width, (i + 1) * width);
    }
    return rows;
  }

  private static int argMax(float[] values) {
    int best = 0;
    for (int j = 1; j < values.length; j++) {
      if (values[j] > values[best]) {
        best = j;
      }
    }
    return best;
  }

  private static double[] doubles(float[] values) {
    double[] out = new double[values.length];
    for (int j = 0; j < values.length; j++) {
      out[j] = values[j];
    }
    return out;
  }

  private static double[] features(Object value) {
    if (value instanceof Vector v) {
      return v.toArray();
    }
    List<?> list = scala.collection.JavaConverters.seqAsJavaList((scala.collection.Seq<?>) value);
    double[] out = new double[list.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ((Number) list.get(i)).doubleValue();
    }
    return out;
  }
}
