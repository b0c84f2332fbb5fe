package io.sparkps.ml.embedding;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ml.training.PsTrainingStep;
import java.util.Iterator;
import org.apache.spark.sql.Row;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One worker's training step of an embedding model: pull the rows of the minibatch's unique keys
 * (a SYNC table waits for the step before), pool them into the network's input beside the numeric
 * values, run the dense step ({@link PsTrainingStep}: pull, gradient, push), and push the input
 * gradient as row gradients of the mean loss. With one worker and SYNC, a table's rows move as a
 * single process applying the same lazy optimizer to the same minibatches would move them.
 */
public final class EmbeddingStep {
  private final PsTrainingStep dense;
  private final TableLookup lookup;
  private final CategoricalRows rows;
  private final boolean divideByMinibatch;
  private long keysPulled;

  private long tablePullNanos;
  private long tablePushNanos;

  public EmbeddingStep(PsTrainingStep dense, TableLookup lookup, CategoricalRows rows, boolean divideByMinibatch) {
    this.dense = dense;
    this.lookup = lookup;
    this.rows = rows;
    this.divideByMinibatch = divideByMinibatch;
    dense.keepInputGradient();
  }

  /** Step {@code step} (this worker's, from 0) on the rows {@code batch}; returns the minibatch's loss. */
  public double step(int[] batch, long step, int epoch) {
    long t0 = System.nanoTime();
    TableLookup.Pulled pulled = lookup.pull(rows, batch, step, true);
    tablePullNanos = System.nanoTime() - t0;
    for (int t = 0; t < rows.inputs().tables().size(); t++) {
      keysPulled += pulled.unique(t).length;
    }
    int width = rows.inputs().width();
    int labelWidth = rows.labelWidth();
    float[] labels = new float[batch.length * labelWidth];
    for (int i = 0; i < batch.length; i++) {
      System.arraycopy(rows.labels(), batch[i] * labelWidth, labels, i * labelWidth, labelWidth);
    }
    DataSet data = new DataSet(Nd4j.create(lookup.features(pulled), new long[] {batch.length, width}, 'c'),
        Nd4j.create(labels, new long[] {batch.length, labelWidth}, 'c'));
    double loss = dense.step(data, step, epoch);
    float[] inputGradient = dense.inputGradient().castTo(org.nd4j.linalg.api.buffer.DataType.FLOAT).dup('c')
        .data().asFloat();
    long t1 = System.nanoTime();
    lookup.push(pulled, inputGradient, divideByMinibatch ? 1.0 / batch.length : 1.0, step);
    tablePushNanos = System.nanoTime() - t1;
    return loss;
  }

  /** The dense part of the step (its times are the dense variables'). */
  public PsTrainingStep dense() {
    return dense;
  }

  /** Milliseconds the last step spent pulling its table rows and pushing their gradients. */
  public double tableMillis() {
    return (tablePullNanos + tablePushNanos) / 1e6;
  }

  /** The unique keys this worker's steps pulled so far (each step's, summed over its tables). */
  long keysPulled() {
    return keysPulled;
  }

  /**
   * Reads a partition whose rows are the label, then {@link EmbeddingInputs#names()}, into
   * categorical rows with labels as wide as the network's output: a class index becomes a one-hot
   * row (with one output unit, the label itself: 0 or 1), a regression target stays as it is.
   */
  public static CategoricalRows read(Iterator<Row> data, EmbeddingInputs inputs, boolean classification, int outputs,
      int partition) {
    CategoricalRows rows = new CategoricalRows(inputs, outputs);
    int[] at = new int[inputs.names().size()];
    for (int i = 0; i < at.length; i++) {
      at[i] = i + 1;
    }
    float[] label = new float[outputs];
    long n = 0;
    while (data.hasNext()) {
      Row row = data.next();
      if (row.isNullAt(0)) {
        throw new IllegalArgumentException("row " + n + " of partition " + partition + " has no label: drop or fill "
            + "the rows whose label is null");
      }
      double y = ((Number) row.get(0)).doubleValue();
      java.util.Arrays.fill(label, 0f);
      if (classification && outputs > 1) {
        if (y != Math.rint(y) || y < 0 || y >= outputs) {
          throw new IllegalArgumentException("row " + n + " of partition " + partition + " has label " + y + ", not a "
              + "class index in [0, " + outputs + ") of the network's " + outputs + " outputs");
        }
        label[(int) y] = 1f;
      } else {
        if (classification && (y < 0 || y > 1)) {
          throw new IllegalArgumentException("row " + n + " of partition " + partition + " has label " + y + "; a "
              + "network with one output unit takes labels in [0, 1] (1: the positive class)");
        }
        label[0] = (float) y;
      }
      try {
        rows.append(row, at, label);
      } catch (OutOfMemoryError full) {
        // The arrays double as they grow: the allocation that failed is the new one, and the rows go
        // with this exception, so the JVM goes on.
        long held = rows.bytes() >> 20;
        rows = null;
        throw new IllegalStateException("worker " + partition + " ran out of heap holding its partition's categorical "
            + "rows: " + n + " rows read (" + held + " MiB of ids, values and labels), " + (Runtime.getRuntime()
            .maxMemory() >> 20) + " MiB of heap in this JVM. Train with more workers (each holds its share), give "
            + "the executors more memory (spark.executor.memory, or the driver's in local mode), or fewer "
            + "categorical columns: an embedding model's rows are not spilled to disk yet", full);
      }
      n++;
    }
    return rows;
  }
}
