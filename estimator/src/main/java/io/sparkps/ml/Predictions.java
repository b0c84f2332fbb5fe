package io.sparkps.ml;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** A {@link Dl4jModel}'s batched inference over a partition's rows. */
final class Predictions {
  static final int BATCH = 256;

  private Predictions() {}

  static INDArray denseInput(List<Row> batch, int featureIndex) {
    double[][] x = new double[batch.size()][];
    for (int i = 0; i < x.length; i++) {
      x[i] = features(batch.get(i).get(featureIndex));
    }
    return Nd4j.createFromArray(x).castTo(org.nd4j.linalg.api.buffer.DataType.FLOAT);
  }

  /**
   * The rows of {@code rows} with their predictions, made a batch of {@link #BATCH} at a time as
   * they are read (a task holds one batch, not its partition); {@code done} runs once the last is.
   */
  static Iterator<Row> of(Iterator<Row> rows, java.util.function.Function<List<Row>, INDArray> inputs,
      String json, float[] params, Runnable done) {
    Net net = Net.fromJson(json);
    net.setParams(params);
    boolean classifier = net.classification();
    Net raw = classifier ? net.withIdentityOutput() : null;
    return new Iterator<>() {
      private final List<Row> out = new ArrayList<>(BATCH);
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
        List<Row> batch = new ArrayList<>(BATCH);
        while (batch.size() < BATCH && rows.hasNext()) {
          batch.add(rows.next());
        }
        INDArray input = inputs.apply(batch);
        INDArray p = net.output(input);
        INDArray rawOut = classifier ? raw.output(input) : null;
        INDArray best = classifier ? p.argMax(1) : null;
        for (int i = 0; i < batch.size(); i++) {
          Row r = batch.get(i);
          List<Object> values = new ArrayList<>(r.length() + 3);
          for (int c = 0; c < r.length(); c++) {
            values.add(r.get(c));
          }
          if (classifier) {
            values.add((double) best.getLong(i));
            values.add(Vectors.dense(p.getRow(i).toDoubleVector()));
            values.add(Vectors.dense(rawOut.getRow(i).toDoubleVector()));
          } else {
            values.add(p.size(1) == 1 ? (Object) p.getDouble(i, 0) : Vectors.dense(p.getRow(i).toDoubleVector()));
          }
          out.add(RowFactory.create(values.toArray()));
        }
        return true;
      }

      @Override
      public Row next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return out.get(next++);
      }
    };
  }

  /** Runs an action the first time it is run, and never again. */
  static final class Once implements Runnable {
    private final Runnable action;
    private boolean ran;

    Once(Runnable action) {
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
