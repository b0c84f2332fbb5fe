package io.sparkps.ml.embedding;

import io.sparkps.ml.data.BlockOrder;
import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.data.SpillFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.spark.sql.Row;

/**
 * One worker's partition of an embedding model's rows, read once, served as shuffled minibatches
 * for as many epochs as asked; the categorical counterpart of {@link Minibatches}. A partition whose
 * rows take at most {@link Minibatches.Limits#inMemoryMax()} bytes stays in memory, in one
 * {@link CategoricalRows}. A larger one is written to a spill file as it is read, in blocks of
 * {@link #BLOCK_ROWS} rows or {@link #BLOCK_BYTES} bytes (rows with long arrays of ids), and each
 * epoch reads it back one shuffle window of blocks at a time: the blocks in a seeded order, the
 * rows within a window shuffled. So a worker holds a window of rows
 * (about {@link Minibatches.Limits#shuffleWindowRows()} of them) and one block being written, not
 * its partition. Closing deletes the spill file.
 */
public final class CategoricalPartition implements AutoCloseable {
  /** Rows per block of a spill file: the unit of its writes, reads and block shuffle. */
  static final int BLOCK_ROWS = 4096;
  /** Bytes a block of rows ends at, before it has {@link #BLOCK_ROWS} rows. */
  static final int BLOCK_BYTES = 4 << 20;

  private final EmbeddingInputs inputs;
  private final int labelWidth;
  private final Minibatches.Limits limits;
  private final Path dir;
  private final String prefix;
  /** In memory, every row; while spilling, the block being filled; null once spilled and read. */
  private CategoricalRows held;
  private long rows;
  private SpillFile file;
  /** Where block b starts in the spill file, and (at b + 1) where it ends. */
  private long[] offsets = new long[17];
  /** Rows in block b. */
  private int[] blockRows = new int[16];
  private int blocks;
  private ByteBuffer buffer;
  /** The latest epoch of a spilled partition, whose window is held. */
  private Spilled active;
  private boolean closed;

  private CategoricalPartition(EmbeddingInputs inputs, int labelWidth, Minibatches.Limits limits, Path dir,
      String prefix) {
    this.inputs = inputs;
    this.labelWidth = labelWidth;
    this.limits = limits;
    this.dir = dir;
    this.prefix = prefix;
    this.held = new CategoricalRows(inputs, labelWidth);
  }

  /**
   * Reads a partition whose rows are the label, then {@link EmbeddingInputs#names()}, with labels as
   * wide as the network's {@code outputs}: a class index becomes a one-hot row (with one output unit,
   * the label itself: 0 or 1), a regression target stays as it is. Beyond {@code limits} the rows go
   * to a spill file in {@code spillDir}. Bad rows fail naming their place in the partition and the fix.
   */
  public static CategoricalPartition read(Iterator<Row> data, EmbeddingInputs inputs, boolean classification,
      int outputs, int partition, Minibatches.Limits limits, Path spillDir) {
    CategoricalPartition read = new CategoricalPartition(inputs, outputs, limits, spillDir,
        "sparkps-spill-categorical-" + Math.max(partition, 0) + "-");
    try {
      int[] at = new int[inputs.names().size()];
      for (int i = 0; i < at.length; i++) {
        at[i] = i + 1;
      }
      float[] label = new float[outputs];
      while (data.hasNext()) {
        Row row = data.next();
        label(row, read.rows, partition, classification, label);
        read.append(row, at, label, partition);
      }
      read.finish();
      return read;
    } catch (RuntimeException | Error e) {
      read.close();
      throw e;
    }
  }

  private static void label(Row row, long n, int partition, boolean classification, float[] label) {
    if (row.isNullAt(0)) {
      throw new IllegalArgumentException("row " + n + " of partition " + partition + " has no label: drop or fill "
          + "the rows whose label is null");
    }
    double y = ((Number) row.get(0)).doubleValue();
    int outputs = label.length;
    Arrays.fill(label, 0f);
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
  }

  private void append(Row row, int[] at, float[] label, int partition) {
    try {
      held.append(row, at, label);
    } catch (OutOfMemoryError full) {
      // The arrays double as they grow: the allocation that failed is the new one, and the rows go
      // with this exception, so the JVM goes on.
      long bytes = held.bytes() >> 20;
      held = null;
      String read = rows + " rows read (" + bytes + " MiB of ids, values and labels), " + (Runtime.getRuntime()
          .maxMemory() >> 20) + " MiB of heap in this JVM";
      if (limits.inMemoryMax() == Long.MAX_VALUE) { // rows that never spill: the held-out rows
        throw new IllegalStateException("ran out of heap holding categorical rows in memory: " + read + ". Give "
            + "fewer rows (e.g. a sample of the evaluation data) or the JVM more memory (spark.driver.memory)", full);
      }
      throw new IllegalStateException("worker " + partition + " ran out of heap holding its partition's categorical "
          + "rows: " + read + ". Lower " + io.sparkps.spark.SparkPsConf.DATA_IN_MEMORY_MAX.key() + " (now "
          + (limits.inMemoryMax() >> 20) + " MiB) so that the rows spill to local disk sooner, give the executors "
          + "more memory (spark.executor.memory, or the driver's in local mode), or train with more workers (each "
          + "holds its share)", full);
    }
    rows++;
    if (file != null) {
      if (held.size() == BLOCK_ROWS || held.usedBytes() >= BLOCK_BYTES) {
        writeBlocks(held);
        held.clear();
      }
    } else if (held.bytes() > limits.inMemoryMax()) {
      spill();
    }
  }

  /** Moves the rows held so far into a new spill file, a block at a time; later rows go to it a block at a time. */
  private void spill() {
    file = SpillFile.create(dir, prefix, ".rows");
    writeBlocks(held);
    held = new CategoricalRows(inputs, labelWidth);
  }

  /**
   * Writes {@code from}'s rows to the spill file in blocks of at most {@link #BLOCK_ROWS} rows that
   * end once they reach {@link #BLOCK_BYTES} (a block holds one row at least).
   */
  private void writeBlocks(CategoricalRows from) {
    for (int first = 0, end; first < from.size(); first = end) {
      end = first + 1;
      while (end < from.size() && end - first < BLOCK_ROWS && from.writtenBytes(first, end) < BLOCK_BYTES) {
        end++;
      }
      int bytes = from.writtenBytes(first, end);
      if (buffer == null || buffer.capacity() < bytes) {
        buffer = ByteBuffer.allocate(Math.max(bytes, buffer == null ? 0 : buffer.capacity() * 2))
            .order(ByteOrder.nativeOrder());
      }
      buffer.clear();
      from.write(first, end, buffer);
      buffer.flip();
      if (blocks + 1 == offsets.length) {
        offsets = Arrays.copyOf(offsets, offsets.length * 2);
        blockRows = Arrays.copyOf(blockRows, offsets.length);
      }
      file.write(buffer, offsets[blocks]);
      offsets[blocks + 1] = offsets[blocks] + bytes;
      blockRows[blocks] = end - first;
      blocks++;
    }
  }

  /** Ends reading: a partition over the limit spills, and a spilled one writes its last, partial block. */
  private void finish() {
    if (file == null && held.size() > 0 && held.bytes() > limits.inMemoryMax()) {
      spill();
    }
    if (file != null) {
      writeBlocks(held);
      held = null;
    }
  }

  public EmbeddingInputs inputs() {
    return inputs;
  }

  /** Rows in this partition. */
  public long rows() {
    return rows;
  }

  /** The spill file, or null when the rows are held in memory. */
  public Path spillFile() {
    return file == null ? null : file.path();
  }

  /** Bytes of the spill file (0 in memory). */
  public long spilledBytes() {
    return offsets[blocks];
  }

  /** Every row, when held in memory. */
  public CategoricalRows inMemory() {
    if (file != null) {
      throw new IllegalStateException("the rows were spilled to " + file.path() + "; read them by epochs");
    }
    return held;
  }

  /** A minibatch: rows {@code index} of {@code rows}. */
  public record Batch(CategoricalRows rows, int[] index) {}

  /**
   * Epoch {@code epoch}'s minibatches from number {@code from} on, {@code steps} in all of
   * {@code batchSize} rows each, in an order drawn from {@code seed} and the epoch, from the start
   * again when the rows run out (every worker takes the same number of steps). In memory, the rows
   * are shuffled together ({@link CategoricalRows#epoch}); spilled, a window at a time, each batch a
   * copy of its rows.
   */
  public Iterator<Batch> epoch(int epoch, int from, int steps, int batchSize, long seed) {
    if (closed) {
      throw new IllegalStateException("this partition was closed" + (file == null ? "" : " and its spill file deleted"));
    }
    if (rows == 0) {
      throw new IllegalStateException("this worker's partition is empty; repartition the data or use fewer workers");
    }
    if (file == null) {
      Iterator<int[]> batches = held.epoch(epoch, from, steps, batchSize, seed);
      return new Iterator<>() {
        @Override
        public boolean hasNext() {
          return batches.hasNext();
        }

        @Override
        public Batch next() {
          return new Batch(held, batches.next());
        }
      };
    }
    active = new Spilled(epoch, from, steps, batchSize, seed);
    return active;
  }

  /**
   * Bytes of rows this partition holds in the heap: in memory, all of them; spilled, the window of
   * its latest epoch and the buffer blocks go through (and, while reading, the block being written).
   */
  long heldBytes() {
    return (held == null ? 0 : held.bytes()) + (active == null ? 0 : active.window.bytes())
        + (buffer == null ? 0 : buffer.capacity());
  }

  /** One epoch of a spilled partition: the blocks in a seeded order, the rows of each window of blocks shuffled. */
  private final class Spilled implements Iterator<Batch> {
    private final BlockOrder order;
    private final int windows;
    private final int steps;
    private final int batchSize;
    /** The window's rows, their arrays kept from window to window. */
    private final CategoricalRows window = new CategoricalRows(inputs, labelWidth);
    private int at = -1;
    private int[] rowOrder;
    private int next;
    private int step;

    Spilled(int epoch, int from, int steps, int batchSize, long seed) {
      int windowBlocks = (int) Math.max(1, Math.min(blocks, ((long) limits.shuffleWindowRows() + BLOCK_ROWS - 1)
          / BLOCK_ROWS));
      this.order = new BlockOrder(blocks, windowBlocks, b -> blockRows[b], seed * 31 + epoch);
      this.windows = order.windows();
      this.steps = steps;
      this.batchSize = batchSize;
      this.step = from;
      long[] start = order.locate((long) from * batchSize % rows);
      open((int) start[0]);
      next = (int) start[1];
    }

    /** Reads window {@code w}'s blocks from the spill file and shuffles its rows. */
    private void open(int w) {
      at = w;
      window.clear();
      for (int b : order.blocks(w)) {
        int bytes = (int) (offsets[b + 1] - offsets[b]);
        if (buffer.capacity() < bytes) {
          buffer = ByteBuffer.allocate(bytes).order(ByteOrder.nativeOrder());
        }
        buffer.clear().limit(bytes);
        file.read(buffer, offsets[b], "block " + b);
        buffer.flip();
        window.read(buffer);
      }
      rowOrder = new int[window.size()];
      for (int i = 0; i < rowOrder.length; i++) {
        rowOrder[i] = i;
      }
      order.shuffleRows(w, rowOrder);
    }

    @Override
    public boolean hasNext() {
      return step < steps;
    }

    @Override
    public Batch next() {
      if (!hasNext()) {
        throw new NoSuchElementException("the epoch has " + steps + " steps");
      }
      if (closed) {
        throw new IllegalStateException("this partition was closed and its spill file deleted");
      }
      CategoricalRows batch = new CategoricalRows(inputs, labelWidth);
      for (int i = 0; i < batchSize; i++) {
        if (next == rowOrder.length) {
          open((at + 1) % windows);
          next = 0;
        }
        batch.append(window, rowOrder[next++]);
      }
      step++;
      int[] index = new int[batchSize];
      for (int i = 0; i < batchSize; i++) {
        index[i] = i;
      }
      return new Batch(batch, index);
    }
  }

  /** Deletes the spill file; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    held = null;
    active = null;
    if (file != null) {
      file.close();
    }
  }
}
