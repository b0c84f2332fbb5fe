package io.sparkps.ml.data;

import java.io.Serializable;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Iterator;
import org.apache.spark.sql.Row;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One worker's partition, read once into compact float32 records, served as shuffled minibatches
 * (seeded) for as many epochs as asked. A partition under {@link Limits#inMemoryMax()} stays in
 * memory; a larger one is streamed into a spill file in a local directory and read back through
 * memory mappings of one shuffle window at a time, so a worker's memory is bounded by the window,
 * not by its partition. Both are shuffled the same way: the order of the blocks, then the records
 * within a window of blocks (in memory, the window is the whole partition). Bad rows fail when
 * read, naming where they are in the user's input, the column and the fix; nothing is skipped.
 * Closing deletes the spill file.
 */
public final class Minibatches implements AutoCloseable {
  /**
   * How much of a partition is held in memory, and the shuffle window of a spilled one.
   *
   * @param inMemoryMax bytes of records held in memory; a larger partition spills to a file
   * @param shuffleWindowRows records mapped and shuffled together when reading a spill file
   */
  public record Limits(long inMemoryMax, int shuffleWindowRows) implements Serializable {
    /** Everything in memory. */
    public static final Limits IN_MEMORY = new Limits(Long.MAX_VALUE, Integer.MAX_VALUE);

    /** Checks the values. */
    public Limits {
      if (inMemoryMax < 0 || shuffleWindowRows < 1) {
        throw new IllegalArgumentException("inMemoryMax (" + inMemoryMax + ") must be >= 0 and shuffleWindowRows ("
            + shuffleWindowRows + ") >= 1");
      }
    }
  }

  private final RowStore store;
  private final int width;
  private final int outputs;
  private final int windowBlocks;
  private Batches active;
  /** The two pairs of arrays recycled batches take in turn, and whose turn is next. */
  private final INDArray[][] recycled = new INDArray[2][];
  private int turn;

  private Minibatches(RowStore store, int width, int outputs, Limits limits) {
    this.store = store;
    this.width = width;
    this.outputs = outputs;
    this.windowBlocks = store.spilled()
        ? (int) Math.max(1, Math.min(store.blocks(), (limits.shuffleWindowRows() + (long) store.blockRows() - 1)
            / store.blockRows()))
        : Math.max(1, store.blocks());
  }

  /**
   * Reads rows with a vector (or array of numbers) column {@code featuresCol} of {@code width}
   * values and a label column {@code labelCol} of {@code kind} for a network of {@code outputs}
   * output units; spills to a file in {@code spillDir} beyond {@code limits}.
   */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      LabelKind kind, int outputs, Limits limits, Path spillDir) {
    RowDecoder decoder = new RowDecoder(partition, featuresCol, labelCol, width, kind, outputs);
    RowStore store = new RowStore(decoder.recordFloats(), limits.inMemoryMax(), spillDir,
        "sparkps-spill-" + Math.max(partition, 0) + "-");
    try {
      float[] record = new float[decoder.recordFloats()];
      long offset = 0;
      while (data.hasNext()) {
        decoder.decode(data.next(), offset++, record);
        store.append(record);
      }
      store.finish();
      return new Minibatches(store, width, outputs, limits);
    } catch (RuntimeException | Error e) {
      store.close();
      throw e;
    }
  }

  /** {@link #of(Iterator, int, String, String, int, LabelKind, int, Limits, Path)} held in memory. */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      LabelKind kind, int outputs) {
    return of(data, partition, featuresCol, labelCol, width, kind, outputs, Limits.IN_MEMORY, null);
  }

  /** {@link #of(Iterator, int, String, String, int, LabelKind, int)} with class-index labels. */
  public static Minibatches of(Iterator<Row> data, int partition, String featuresCol, String labelCol, int width,
      int classes) {
    return of(data, partition, featuresCol, labelCol, width, LabelKind.CLASS_INDEX, classes);
  }

  /** The features, row after row (a copy; in memory only). */
  public float[] features() {
    return store.column(0, width);
  }

  /** The labels, a row of the output width per example (a copy; in memory only). */
  public float[] labels() {
    return store.column(width, outputs);
  }

  /** Rows in this partition. */
  public int size() {
    return Math.toIntExact(store.records());
  }

  /** Rows in this partition. */
  public long rows() {
    return store.records();
  }

  /** Bytes of the spill file (0 in memory). */
  public long spilledBytes() {
    return store.spilled() ? store.records() * store.recordFloats() * Float.BYTES : 0;
  }

  /** The spill file, or null when the partition is held in memory. */
  public Path spillFile() {
    return store.file();
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
   * the batches it would have had). Starting another epoch ends this one.
   */
  public Iterator<DataSet> epoch(int epoch, int from, int steps, int batchSize, long seed) {
    return epoch(epoch, from, steps, batchSize, seed, false);
  }

  /**
   * As {@link #epoch(int, int, int, int, long)}; with {@code recycle}, the batches are written into
   * two pairs of arrays in turn (kept across epochs), not into new ones: a batch stays as it is until
   * the second batch after it is taken. That suits a loop that trains on one batch while the next is
   * made ({@link Prefetched}), and spares it a native allocation, zeroed page by page, of every batch.
   */
  public Iterator<DataSet> epoch(int epoch, int from, int steps, int batchSize, long seed, boolean recycle) {
    if (store.records() == 0) {
      throw new IllegalStateException("this worker's partition is empty; repartition the data or use fewer workers");
    }
    if (active != null) {
      active.release();
    }
    active = new Batches(epoch, from, steps, batchSize, seed, recycle);
    return active;
  }

  /** The arrays of the next recycled batch of {@code batchSize} rows: the pair the batch before last had. */
  private synchronized INDArray[] recycled(int batchSize) {
    INDArray[] pair = recycled[turn];
    if (pair == null || pair[0].rows() != batchSize) {
      try (org.nd4j.linalg.api.memory.MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
        pair = newArrays(batchSize);
      }
      recycled[turn] = pair;
    }
    turn = 1 - turn;
    return pair;
  }

  /** New features and labels arrays for a batch of {@code batchSize} rows. */
  private INDArray[] newArrays(int batchSize) {
    return new INDArray[] {Nd4j.createUninitialized(DataType.FLOAT, new long[] {batchSize, width}, 'c'),
        Nd4j.createUninitialized(DataType.FLOAT, new long[] {batchSize, outputs}, 'c')};
  }

  /** Unmaps what is mapped and deletes the spill file. */
  @Override
  public void close() {
    if (active != null) {
      active.release();
      active = null;
    }
    store.close();
  }

  /** One epoch's batches: the blocks in a seeded order, the records of each window of blocks shuffled. */
  private final class Batches implements Iterator<DataSet> {
    private final BlockOrder blocks;
    private final int windows;
    private final int steps;
    private final int batchSize;
    private final boolean recycle;
    private final RowStore.Block[] views = new RowStore.Block[windowBlocks];
    private int window = -1;
    private int[] order;
    private int next;
    private int step;
    private boolean released;

    Batches(int epoch, int from, int steps, int batchSize, long seed, boolean recycle) {
      this.recycle = recycle;
      this.steps = steps;
      this.batchSize = batchSize;
      this.step = from;
      blocks = new BlockOrder(store.blocks(), windowBlocks, store::rowsIn, seed * 31 + epoch);
      windows = blocks.windows();
      long[] start = blocks.locate((long) from * batchSize % store.records());
      open((int) start[0]);
      next = (int) start[1];
    }

    /** Maps window {@code w}'s blocks (unmapping the last window's) and shuffles its records. */
    private void open(int w) {
      unmapWindow();
      window = w;
      int[] in = blocks.blocks(w);
      order = new int[(int) blocks.rows(w)];
      int at = 0;
      for (int slot = 0; slot < in.length; slot++) {
        views[slot] = store.block(in[slot]);
        for (int r = 0, n = store.rowsIn(in[slot]); r < n; r++) {
          order[at++] = slot * store.blockRows() + r;
        }
      }
      blocks.shuffleRows(w, order);
    }

    /**
     * Unmaps the window. Synchronized with {@link #next}: a batch being copied on the prefetch
     * thread when the task ends (its thread interrupted, its prefetch timed out) finishes before
     * its blocks are unmapped; unmapping under it crashed the JVM.
     */
    synchronized void release() {
      released = true;
      unmapWindow();
    }

    private void unmapWindow() {
      for (int i = 0; i < views.length; i++) {
        RowStore.release(views[i]);
        views[i] = null;
      }
    }

    @Override
    public boolean hasNext() {
      return step < steps;
    }

    @Override
    public synchronized DataSet next() {
      if (released && step < steps) {
        throw new IllegalStateException("these minibatches were released: the epoch or the partition was closed");
      }
      if (!hasNext()) {
        throw new java.util.NoSuchElementException("the epoch has " + steps + " steps");
      }
      INDArray[] pair = recycle ? recycled(batchSize) : newArrays(batchSize);
      INDArray x = pair[0];
      INDArray y = pair[1];
      FloatBuffer xs = floats(x);
      FloatBuffer ys = floats(y);
      int floats = store.recordFloats();
      for (int b = 0; b < batchSize; b++) {
        if (next == order.length) {
          open((window + 1) % windows);
          next = 0;
        }
        int e = order[next++];
        FloatBuffer block = views[e / store.blockRows()].floats();
        int at = (e % store.blockRows()) * floats;
        xs.put(b * width, block, at, width);
        ys.put(b * outputs, block, at + width, outputs);
      }
      if (++step == steps) {
        release();
      }
      return new DataSet(x, y);
    }
  }

  /** The array's own memory as floats (written in bulk, not element by element). */
  private static FloatBuffer floats(INDArray a) {
    return a.data().asNio().order(ByteOrder.nativeOrder()).asFloatBuffer();
  }
}
