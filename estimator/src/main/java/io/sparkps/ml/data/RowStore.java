package io.sparkps.ml.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Fixed-width float32 records, appended once and then read by blocks: held in memory while they
 * fit under a limit, else streamed through one block-sized buffer into a spill file whose blocks
 * are memory-mapped only while read and unmapped after. Closing deletes the file. Not thread-safe:
 * one task writes and reads it.
 */
final class RowStore implements AutoCloseable {
  /** Bytes per block: the unit of the block shuffle, of writes, and of mappings. */
  static final int BLOCK_BYTES = 1 << 20;

  private final int recordFloats;
  private final int blockRows;
  private final long memoryLimit;
  private final Path dir;
  private final String prefix;
  private final List<float[]> blocks = new ArrayList<>();
  private float[] current;
  private int inCurrent;
  private long records;
  private SpillFile file;
  private long written;
  private ByteBuffer out;
  private boolean closed;

  /**
   * A store of records of {@code recordFloats} floats that spills to a file named after
   * {@code prefix} in {@code dir} once it holds more than {@code memoryLimit} bytes.
   */
  RowStore(int recordFloats, long memoryLimit, Path dir, String prefix) {
    this.recordFloats = recordFloats;
    this.blockRows = Math.max(1, BLOCK_BYTES / (recordFloats * Float.BYTES));
    this.memoryLimit = memoryLimit;
    this.dir = dir;
    this.prefix = prefix;
    this.current = new float[blockRows * recordFloats];
  }

  void append(float[] record) {
    System.arraycopy(record, 0, current, inCurrent * recordFloats, recordFloats);
    records++;
    if (++inCurrent == blockRows) {
      endBlock();
    }
  }

  private void endBlock() {
    if (file != null) {
      write(current, inCurrent);
    } else {
      blocks.add(current);
      current = new float[blockRows * recordFloats];
      if ((long) blocks.size() * blockRows * recordFloats * Float.BYTES > memoryLimit) {
        spill();
      }
    }
    inCurrent = 0;
  }

  /** Moves the blocks held so far into a new spill file; later blocks go straight to it. */
  private void spill() {
    file = SpillFile.create(dir, prefix, ".f32");
    out = ByteBuffer.allocateDirect(blockRows * recordFloats * Float.BYTES).order(ByteOrder.nativeOrder());
    blocks.forEach(b -> write(b, blockRows));
    blocks.clear();
  }

  private void write(float[] block, int rows) {
    out.clear();
    out.asFloatBuffer().put(block, 0, rows * recordFloats);
    out.limit(rows * recordFloats * Float.BYTES);
    file.write(out, written);
    written += rows * recordFloats * Float.BYTES;
  }

  /** Ends appending: the last, partial block is kept or written. */
  void finish() {
    if (inCurrent > 0 || records == 0) {
      if (file != null) {
        write(current, inCurrent);
      } else {
        blocks.add(java.util.Arrays.copyOf(current, inCurrent * recordFloats));
      }
    }
    current = null;
    out = null;
  }

  long records() {
    return records;
  }

  int recordFloats() {
    return recordFloats;
  }

  /** Records per block (the last block may hold fewer). */
  int blockRows() {
    return blockRows;
  }

  int blocks() {
    return (int) ((records + blockRows - 1) / blockRows);
  }

  int rowsIn(int block) {
    return (int) Math.min(blockRows, records - (long) block * blockRows);
  }

  /** Whether the records went to a spill file. */
  boolean spilled() {
    return file != null;
  }

  /** The spill file, or null when the records are in memory. */
  Path file() {
    return file == null ? null : file.path();
  }

  /** A block's records, one after another, and the mapping they are read through (null in memory). */
  record Block(FloatBuffer floats, MappedByteBuffer mapping) {}

  /** Block {@code b}'s records; a spilled block stays mapped until {@link #release}. */
  Block block(int b) {
    if (file == null) {
      return new Block(FloatBuffer.wrap(blocks.get(b)), null);
    }
    long bytes = (long) rowsIn(b) * recordFloats * Float.BYTES;
    try {
      MappedByteBuffer mapped = file.channel().map(FileChannel.MapMode.READ_ONLY, (long) b * blockRows * recordFloats
          * Float.BYTES, bytes);
      return new Block(mapped.order(ByteOrder.nativeOrder()).asFloatBuffer(), mapped);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot map block " + b + " of the spill file " + file.path() + ": "
          + e.getMessage(), e);
    }
  }

  /** Unmaps a block from {@link #block} at once (the buffer must not be read again); in-memory blocks stay. */
  static void release(Block block) {
    if (block != null && block.mapping() != null) {
      Unmapper.unmap(block.mapping());
    }
  }

  /**
   * Floats {@code [from, from + count)} of every record, record after record, in one array (only
   * when not spilled and under 2^31 floats): e.g. the features, or the labels.
   */
  float[] column(int from, int count) {
    if (file != null) {
      throw new IllegalStateException("the records were spilled to " + file.path() + "; read them by blocks");
    }
    float[] out = new float[Math.toIntExact(records * count)];
    int at = 0;
    for (float[] b : blocks) {
      for (int r = 0; r + recordFloats <= b.length && at < out.length; r += recordFloats, at += count) {
        System.arraycopy(b, r + from, out, at, count);
      }
    }
    return out;
  }

  /** Deletes the spill file; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    blocks.clear();
    if (file != null) {
      file.close();
    }
  }

  /**
   * Unmaps mapped buffers at once through the JDK's {@code sun.misc.Unsafe.invokeCleaner}, so that
   * a worker's mappings stay within its shuffle window; where that is missing, the GC unmaps them.
   */
  private static final class Unmapper {
    private static final Object UNSAFE;
    private static final Method INVOKE_CLEANER;

    static {
      Object unsafe = null;
      Method invoke = null;
      try {
        Class<?> c = Class.forName("sun.misc.Unsafe");
        Field f = c.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        unsafe = f.get(null);
        invoke = c.getMethod("invokeCleaner", ByteBuffer.class);
      } catch (ReflectiveOperationException | RuntimeException e) {
        unsafe = null;
      }
      UNSAFE = unsafe;
      INVOKE_CLEANER = invoke;
    }

    static void unmap(MappedByteBuffer mapped) {
      if (UNSAFE == null) {
        return;
      }
      try {
        INVOKE_CLEANER.invoke(UNSAFE, mapped);
      } catch (ReflectiveOperationException | RuntimeException e) {
        // the GC unmaps it later
      }
    }
  }
}
