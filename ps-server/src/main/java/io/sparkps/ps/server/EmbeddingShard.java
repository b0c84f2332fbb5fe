package io.sparkps.ps.server;

import io.sparkps.ps.spec.EmbeddingTableFullException;
import io.sparkps.ps.wire.Ids;
import java.util.Arrays;
import java.util.BitSet;

/**
 * One parameter server's share of a dynamic embedding table: rows of {@code dim} floats keyed by
 * 64-bit ids, created as ids arrive ({@link IdSlots}, so ids never collide), each with its lazy
 * optimizer state ({@link RowRule}), the step it was last touched and whether it changed since the
 * last checkpoint. Memory is bounded by {@code maxRows}: a new id past it evicts the rows untouched
 * for {@code evictAfterSteps}, or fails with {@link EmbeddingTableFullException}.
 *
 * <p>Ids not admitted yet (seen fewer than {@code minCount} times) and, when reading for inference,
 * ids never trained share the <em>default row</em>, which trains like any row on the gradients of
 * the ids it stands for. So a missing or unseen id has a meaning and never fails. A new row starts
 * from a value that is a function of its id and the seed (uniform in +-{@code initScale}), so that
 * a row created again after eviction, or by a reference, starts the same.
 *
 * <p>Not thread-safe: the shard's owner serializes calls (one table, one lock).
 */
final class EmbeddingShard {
  /**
   * The most bytes of a page of rows (or of their state): well under half of G1's smallest region
   * (1 MiB), so that no page is a humongous object, which G1 would give regions of its own (a page of
   * just over half a region wastes the rest: a table held in 1 MiB regions took twice its size).
   */
  private static final int PAGE_BYTES = 256 * 1024 - 64;
  static final int DEFAULT_SLOT = 0;

  private final String table;
  private final int shard;
  private final int dim;
  private final RowRule rule;
  private final int stateWidth;
  /** Rows per page: {@code 1 << pageBits}, as many as {@link #PAGE_BYTES} holds (at most 4096). */
  private final int pageBits;
  private final int pageMask;
  private final int maxRows;
  private final long evictAfterSteps;
  private final Admission admission;
  private final long seed;
  private final float initScale;
  private final IdSlots index;
  private float[][] rows = new float[0][];
  private float[][] states = new float[0][];
  private long[] ids = new long[0];
  private long[] touched = new long[0];
  private int[] updates = new int[0];
  private int[] free = new int[0];
  private int freeCount;
  private int slotsUsed = 1; // slot 0 is the default row
  private final BitSet changed = new BitSet();
  private long[] removed = new long[0];
  private int removedCount;

  EmbeddingShard(String table, int shard, int dim, RowRule rule, int maxRows, long evictAfterSteps, int minCount,
      long seed, double initScale) {
    if (dim < 1 || maxRows < 1 || evictAfterSteps < 0 || minCount < 1 || !(initScale >= 0)) {
      throw new IllegalArgumentException("embedding table '" + table + "' needs dim >= 1, maxRows >= 1, "
          + "evictAfterSteps >= 0, minCount >= 1 and initScale >= 0, got " + dim + ", " + maxRows + ", "
          + evictAfterSteps + ", " + minCount + ", " + initScale);
    }
    this.table = table;
    this.shard = shard;
    this.dim = dim;
    this.rule = rule;
    this.stateWidth = rule.stateWidth(dim);
    this.pageBits = pageBits(Math.max(dim, stateWidth));
    this.pageMask = (1 << pageBits) - 1;
    this.maxRows = maxRows;
    this.evictAfterSteps = evictAfterSteps;
    this.admission = minCount > 1 ? new Admission(minCount, maxRows) : null;
    this.seed = seed;
    this.initScale = (float) initScale;
    this.index = new IdSlots(Math.min(maxRows, 1 << 16));
    ensureSlot(DEFAULT_SLOT);
  }

  /** Rows held, the default row not counted. */
  int size() {
    return index.size();
  }

  /** Floats per row. */
  int dim() {
    return dim;
  }

  /**
   * The rows of {@code ids} for a training step into {@code out} ({@code ids.length * dim} floats):
   * an admitted new id gets a row, one not admitted yet reads the default row.
   */
  void pull(long[] ids, float[] out, long step) {
    for (int i = 0; i < ids.length; i++) {
      int slot = index.get(ids[i]);
      if (slot < 0 && (admission == null || admission.admit(ids[i]))) {
        slot = create(ids[i], step);
      }
      copyRow(slot < 0 ? DEFAULT_SLOT : slot, out, i * dim);
    }
  }

  /** The rows of {@code ids} without creating any (inference): an id not held reads the default row. */
  void read(long[] ids, float[] out) {
    for (int i = 0; i < ids.length; i++) {
      int slot = index.get(ids[i]);
      copyRow(slot < 0 ? DEFAULT_SLOT : slot, out, i * dim);
    }
  }

  /**
   * Applies the gradients of {@code ids} ({@code ids.length * dim} floats): one optimizer step per
   * row, after summing the gradients of ids that share it (repeated ids, ids on the default row).
   */
  void push(long[] ids, float[] gradients, long step) {
    IdSlots position = new IdSlots(ids.length);
    int[] slots = new int[ids.length];
    float[] summed = new float[ids.length * dim];
    int distinct = 0;
    for (int i = 0; i < ids.length; i++) {
      int slot = index.get(ids[i]);
      slot = slot < 0 ? DEFAULT_SLOT : slot;
      int at = position.get(slot);
      if (at < 0) {
        at = distinct++;
        position.put(slot, at);
        slots[at] = slot;
      }
      for (int k = 0; k < dim; k++) {
        summed[at * dim + k] += gradients[i * dim + k];
      }
    }
    for (int at = 0; at < distinct; at++) {
      int slot = slots[at];
      rule.apply(rows[slot >>> pageBits], (slot & pageMask) * dim, states[slot >>> pageBits],
          (slot & pageMask) * stateWidth, summed, at * dim, dim, updates[slot]);
      updates[slot]++;
      touched[slot] = step;
      changed.set(slot);
    }
  }

  /**
   * Sets the rows of {@code ids} to {@code values} ({@code ids.length * dim} floats), creating the
   * rows not held (a refill from a worker's copy); their optimizer state stays as it is (a new
   * row's starts afresh). The default row is never set.
   */
  void assign(long[] ids, float[] values, long step) {
    for (int i = 0; i < ids.length; i++) {
      int slot = index.get(ids[i]);
      if (slot < 0) {
        slot = create(ids[i], step);
      }
      System.arraycopy(values, i * dim, rows[slot >>> pageBits], (slot & pageMask) * dim, dim);
      touched[slot] = Math.max(touched[slot], step);
      changed.set(slot);
    }
  }

  /** Floats of optimizer state per row. */
  int stateWidth() {
    return stateWidth;
  }

  /**
   * Receives one row: its id ({@link Long#MIN_VALUE} for the default row), values, state, update
   * count and the step it was last touched.
   */
  interface RowSink {
    void accept(long id, float[] row, int rowOffset, float[] state, int stateOffset, int updates, long touched);
  }

  /** Every row held (the default row first), or only those changed since {@link #markCheckpointed}. */
  void forEachRow(boolean changedOnly, RowSink sink) {
    for (int slot = 0; slot < slotsUsed; slot++) {
      boolean held = slot == DEFAULT_SLOT || index.get(ids[slot]) == slot;
      if (held && (!changedOnly || changed.get(slot))) {
        sink.accept(slot == DEFAULT_SLOT ? Long.MIN_VALUE : ids[slot], rows[slot >>> pageBits],
            (slot & pageMask) * dim, states[slot >>> pageBits], (slot & pageMask) * stateWidth,
            updates[slot], touched[slot]);
      }
    }
  }

  /** The ids evicted since {@link #markCheckpointed}: an incremental checkpoint deletes them. */
  long[] evictedSinceCheckpoint() {
    return Arrays.copyOf(removed, removedCount);
  }

  /** A checkpoint holds every row as it is now: no row has changed since, none was evicted. */
  void markCheckpointed() {
    changed.clear();
    removedCount = 0;
  }

  /** What changed since the last checkpoint: the rows' slots and the ids evicted. */
  record Marks(BitSet changed, long[] evicted) {}

  /** {@link #markCheckpointed()}, returning what it forgot so that a checkpoint that fails can give it back. */
  Marks takeMarks() {
    Marks marks = new Marks((BitSet) changed.clone(), evictedSinceCheckpoint());
    markCheckpointed();
    return marks;
  }

  /** Gives back what {@link #takeMarks()} took: the checkpoint that took them was not written. */
  void giveBack(Marks marks) {
    changed.or(marks.changed());
    for (long id : marks.evicted()) {
      if (index.get(id) < 0) {
        recordEvicted(id);
      }
    }
  }

  /**
   * Puts a row as a checkpoint holds it (id {@link Long#MIN_VALUE}: the default row), with its
   * state, update count and last step: no admission, no eviction. A shard asked to hold more than
   * {@code maxRows} rows this way refuses, naming the table.
   */
  void restoreRow(long id, float[] row, int rowOffset, float[] state, int stateOffset, int count, long step) {
    int slot = id == Long.MIN_VALUE ? DEFAULT_SLOT : index.get(id);
    if (slot < 0) {
      if (index.size() >= maxRows) {
        throw new IllegalArgumentException("embedding table '" + table + "' on ps " + shard + " would hold more than "
            + "its " + maxRows + " rows (maxRowsPerShard): the checkpoint was written with another spec");
      }
      slot = freeCount > 0 ? free[--freeCount] : slotsUsed++;
      ensureSlot(slot);
      index.put(id, slot);
      ids[slot] = id;
    }
    System.arraycopy(row, rowOffset, rows[slot >>> pageBits], (slot & pageMask) * dim, dim);
    System.arraycopy(state, stateOffset, states[slot >>> pageBits], (slot & pageMask) * stateWidth,
        stateWidth);
    updates[slot] = count;
    touched[slot] = step;
  }

  /** Removes the row of {@code id} when held (an eviction a checkpoint recorded). */
  void removeRow(long id) {
    int slot = index.get(id);
    if (slot > DEFAULT_SLOT) {
      index.remove(id);
      freeSlot(slot);
    }
  }

  private int create(long id, long step) {
    if (index.size() >= maxRows && evictOlderThan(step - evictAfterSteps) == 0) {
      throw new EmbeddingTableFullException(EmbeddingTableFullException.message(table, shard, maxRows,
          evictAfterSteps == 0 ? "no eviction is set" : "no row was untouched for " + evictAfterSteps + " steps"), null);
    }
    int slot = freeCount > 0 ? free[--freeCount] : slotsUsed++;
    ensureSlot(slot);
    index.put(id, slot);
    ids[slot] = id;
    touched[slot] = step;
    updates[slot] = 0;
    float[] page = rows[slot >>> pageBits];
    int offset = (slot & pageMask) * dim;
    for (int k = 0; k < dim; k++) {
      page[offset + k] = initialValue(id, k);
    }
    Arrays.fill(states[slot >>> pageBits], (slot & pageMask) * stateWidth,
        ((slot & pageMask) + 1) * stateWidth, 0f);
    changed.set(slot);
    return slot;
  }

  /** The initial value of element {@code k} of the row of {@code id}: uniform in +-initScale, from a hash. */
  float initialValue(long id, int k) {
    long h = Ids.mix(Ids.mix(id ^ seed) + k * 0x9E3779B97F4A7C15L);
    return initScale * (float) (2 * ((h >>> 11) / (double) (1L << 53)) - 1);
  }

  /** Evicts every row last touched at or before {@code step}; how many went. */
  private int evictOlderThan(long step) {
    if (evictAfterSteps == 0) {
      return 0;
    }
    int evicted = 0;
    for (int slot = 1; slot < slotsUsed; slot++) {
      if (touched[slot] <= step && index.get(ids[slot]) == slot) {
        index.remove(ids[slot]);
        changed.clear(slot);
        recordEvicted(ids[slot]);
        freeSlot(slot);
        evicted++;
      }
    }
    return evicted;
  }

  private void recordEvicted(long id) {
    if (removedCount == removed.length) {
      removed = Arrays.copyOf(removed, Math.max(16, removed.length * 2));
    }
    removed[removedCount++] = id;
  }

  private void freeSlot(int slot) {
    if (freeCount == free.length) {
      free = Arrays.copyOf(free, Math.max(16, free.length * 2));
    }
    free[freeCount++] = slot;
  }

  private void copyRow(int slot, float[] out, int at) {
    System.arraycopy(rows[slot >>> pageBits], (slot & pageMask) * dim, out, at, dim);
  }

  /** The page size, in bits of rows, for rows of {@code width} floats: at most {@link #PAGE_BYTES}, at most 4096 rows. */
  static int pageBits(int width) {
    int bits = 12;
    while (bits > 0 && (long) (1 << bits) * width * Float.BYTES > PAGE_BYTES) {
      bits--;
    }
    return bits;
  }

  private void ensureSlot(int slot) {
    int page = slot >>> pageBits;
    if (page >= rows.length) {
      rows = Arrays.copyOf(rows, page + 1);
      states = Arrays.copyOf(states, page + 1);
      rows[page] = new float[(pageMask + 1) * dim];
      states[page] = new float[(pageMask + 1) * stateWidth];
    }
    if (slot >= ids.length) {
      int length = Math.max(pageMask + 1, ids.length * 2);
      ids = Arrays.copyOf(ids, length);
      touched = Arrays.copyOf(touched, length);
      updates = Arrays.copyOf(updates, length);
    }
  }
}
