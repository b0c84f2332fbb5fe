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
  private final boolean divideByMinibatch;
  private long keysPulled;

  private long tablePullNanos;
  private long tablePushNanos;

  public EmbeddingStep(PsTrainingStep dense, TableLookup lookup, boolean divideByMinibatch) {
    this.dense = dense;
    this.lookup = lookup;
    this.divideByMinibatch = divideByMinibatch;
    dense.keepInputGradient();
  }

  /** Step {@code step} (this worker's, from 0) on the minibatch {@code minibatch}; returns its loss. */
  public double step(CategoricalPartition.Batch minibatch, long step, int epoch) {
    CategoricalRows rows = minibatch.rows();
    int[] batch = minibatch.index();
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
   * Reads rows whose columns are the label, then {@link EmbeddingInputs#names()}, into memory
   * ({@link CategoricalPartition#read}, held whole): e.g. the held-out rows.
   */
  public static CategoricalRows read(Iterator<Row> data, EmbeddingInputs inputs, boolean classification, int outputs,
      int partition) {
    return CategoricalPartition.read(data, inputs, classification, outputs, partition,
        io.sparkps.ml.data.Minibatches.Limits.IN_MEMORY, null).inMemory();
  }
}
