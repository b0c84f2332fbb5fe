package io.sparkps.ml.embedding;

import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.EmbeddingTableSet;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.EmbeddingSpec;
import java.util.ArrayList;
import java.util.List;

/**
 * An embedding model's tables seen from one worker (or scorer): a minibatch's rows become the
 * network's input by pulling the rows of their unique keys, table by table, and pooling them per
 * column; the network's input gradient becomes row gradients, summed per unique key, and is pushed.
 * Only the keys a minibatch holds travel, so a step's bytes follow its unique ids, not the tables;
 * all the tables travel together, one call per ps each way.
 */
public final class TableLookup {
  private final EmbeddingInputs inputs;
  /** The tables on the ps, pulled and pushed together; null for a lookup that only scores. */
  private final EmbeddingTableSet tables;
  private final Reader reader;

  /** Reads rows to score: table t's rows of {@code keys}, a key the table does not hold reading its default row. */
  @FunctionalInterface
  public interface Reader {
    float[] read(int t, long[] keys);
  }

  /** Creates (or finds) the tables of {@code inputs} on {@code ps}, following consistency group {@code group}. */
  public TableLookup(EmbeddingInputs inputs, PsClient ps, String group) {
    this.inputs = inputs;
    List<EmbeddingSpec> specs = new ArrayList<>();
    for (EmbeddingInputs.Table t : inputs.tables()) {
      specs.add(t.spec(group));
    }
    this.tables = ps.embeddingTables(specs);
    this.reader = null;
  }

  /** A lookup that only scores: the rows come from {@code reader} (a pull to train is refused). */
  public TableLookup(EmbeddingInputs inputs, Reader reader) {
    this.inputs = inputs;
    this.tables = null;
    this.reader = reader;
  }

  /** What one minibatch pulled: per table its unique keys and their rows, and each key position's slot. */
  public static final class Pulled {
    private final CategoricalRows rows;
    private final int[] batch;
    private final long[][] unique;
    private final float[][] values;
    /** For table t, its lookup k and row i of the batch: the slots (in t's unique keys) of the row's keys. */
    private final int[][][][] slots;
    /** The network's input made from these rows, once {@link #features} made it. */
    private float[] features;

    private Pulled(CategoricalRows rows, int[] batch, long[][] unique, float[][] values, int[][][][] slots) {
      this.rows = rows;
      this.batch = batch;
      this.unique = unique;
      this.values = values;
      this.slots = slots;
    }

    /** Table t's unique keys in this minibatch. */
    public long[] unique(int t) {
      return unique[t];
    }
  }

  /**
   * Pulls the rows the minibatch {@code batch} (row indices into {@code rows}) reads: for training
   * step {@code step} when {@code train} (a SYNC table waits for the step before), else a read that
   * creates nothing (inference).
   */
  public Pulled pull(CategoricalRows rows, int[] batch, long step, boolean train) {
    if (train && tables == null) {
      throw new IllegalStateException("this lookup reads rows to score; it does not train");
    }
    int count = inputs.tables().size();
    int[][][][] slots = new int[count][][][];
    long[][] unique = new long[count][];
    float[][] values = new float[count][];
    long[] keys = rows.keys();
    for (int t = 0; t < count; t++) {
      List<EmbeddingInputs.Lookup> reads = inputs.lookups(t);
      KeySlots slotOf = new KeySlots(batch.length * reads.size());
      slots[t] = new int[reads.size()][batch.length][];
      for (int k = 0; k < reads.size(); k++) {
        int c = reads.get(k).column();
        for (int i = 0; i < batch.length; i++) {
          int from = rows.start(batch[i], c);
          int[] s = new int[rows.end(batch[i], c) - from];
          for (int j = 0; j < s.length; j++) {
            s[j] = slotOf.slot(keys[from + j], true);
          }
          slots[t][k][i] = s;
        }
      }
      unique[t] = slotOf.keys();
      if (reader != null) {
        values[t] = reader.read(t, unique[t]);
      }
    }
    if (tables != null) { // every table's rows from each ps in one call
      values = train ? tables.pull(unique, step) : tables.read(unique);
    }
    return new Pulled(rows, batch, unique, values, slots);
  }

  /**
   * The network's input for a pulled minibatch: row after row, each column's pooled embedding, then the
   * numeric values (then the wide weights and the factorization term, when on). Made once per pull:
   * later calls return the same array.
   */
  public float[] features(Pulled p) {
    int width = inputs.width();
    int fields = inputs.columns().size();
    int numeric = inputs.numericCols().size();
    if (p.features != null) {
      return p.features;
    }
    float[] x = new float[p.batch.length * width];
    for (int t = 0; t < p.values.length; t++) {
      List<EmbeddingInputs.Lookup> reads = inputs.lookups(t);
      for (int k = 0; k < reads.size(); k++) {
        EmbeddingInputs.Lookup read = reads.get(k);
        boolean mean = inputs.columns().get(read.column()).pooling() == EmbeddingColumn.Pooling.MEAN;
        int dim = read.dim();
        float[] v = p.values[t];
        for (int i = 0; i < p.batch.length; i++) {
          int[] s = p.slots[t][k][i];
          int at = i * width + read.offset();
          for (int slot : s) {
            for (int d = 0; d < dim; d++) {
              x[at + d] += v[slot * dim + d];
            }
          }
          if (mean && s.length > 1) {
            for (int d = 0; d < dim; d++) {
              x[at + d] /= s.length;
            }
          }
        }
      }
    }
    for (int i = 0; i < p.batch.length; i++) {
      int row = i * width;
      for (int j = 0; j < numeric; j++) {
        x[row + inputs.embeddingWidth() + j] = p.rows.value(p.batch[i], j);
      }
      if (inputs.factorization()) {
        x[row + width - 1] = pairwise(x, row, fields, inputs.columns().get(0).dim());
      }
    }
    p.features = x;
    return x;
  }

  /** The sum over pairs of columns of their pooled embeddings' dot product: 1/2 (|sum e|^2 - sum |e|^2). */
  private static float pairwise(float[] x, int row, int fields, int dim) {
    double fm = 0;
    for (int d = 0; d < dim; d++) {
      double sum = 0;
      double squares = 0;
      for (int c = 0; c < fields; c++) {
        double e = x[row + c * dim + d];
        sum += e;
        squares += e * e;
      }
      fm += sum * sum - squares;
    }
    return (float) (fm / 2);
  }

  /**
   * The input gradient with the factorization term's share added to each pooled embedding: the
   * term's gradient by column c's embedding is the sum of the other columns' embeddings.
   */
  private float[] throughFactorization(Pulled p, float[] inputGradient) {
    int width = inputs.width();
    int fields = inputs.columns().size();
    int dim = inputs.columns().get(0).dim();
    float[] x = features(p); // made once per minibatch: the step's input
    float[] g = inputGradient.clone();
    for (int i = 0; i < p.batch.length; i++) {
      int row = i * width;
      float term = inputGradient[row + width - 1];
      for (int d = 0; d < dim; d++) {
        float sum = 0;
        for (int c = 0; c < fields; c++) {
          sum += x[row + c * dim + d];
        }
        for (int c = 0; c < fields; c++) {
          g[row + c * dim + d] += term * (sum - x[row + c * dim + d]);
        }
      }
    }
    return g;
  }

  /**
   * Pushes the row gradients of training step {@code step}: {@code inputGradient} (the loss's
   * gradient by each input value, row after row, as wide as the input) summed per unique key over
   * the minibatch's rows and columns (through the pooling), times {@code scale}.
   */
  public void push(Pulled p, float[] gradient, double scale, long step) {
    if (tables == null) {
      throw new IllegalStateException("this lookup reads rows to score; it does not train");
    }
    int width = inputs.width();
    float[] inputGradient = inputs.factorization() ? throughFactorization(p, gradient) : gradient;
    float[][] gradients = new float[p.unique.length][];
    for (int t = 0; t < gradients.length; t++) {
      int dim = inputs.tables().get(t).settings().dim();
      float[] g = new float[p.unique[t].length * dim];
      List<EmbeddingInputs.Lookup> reads = inputs.lookups(t);
      for (int k = 0; k < reads.size(); k++) {
        EmbeddingInputs.Lookup read = reads.get(k);
        boolean mean = inputs.columns().get(read.column()).pooling() == EmbeddingColumn.Pooling.MEAN;
        for (int i = 0; i < p.batch.length; i++) {
          int[] s = p.slots[t][k][i];
          float scaled = (float) (mean && s.length > 1 ? scale / s.length : scale);
          int at = i * width + read.offset();
          for (int slot : s) {
            for (int d = 0; d < dim; d++) {
              g[slot * dim + d] += scaled * inputGradient[at + d];
            }
          }
        }
      }
      gradients[t] = g;
    }
    tables.push(p.unique, gradients, step); // every table's gradients to each ps in one call
  }
}
