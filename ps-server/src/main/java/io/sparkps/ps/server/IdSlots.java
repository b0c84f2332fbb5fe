package io.sparkps.ps.server;

import java.util.Arrays;

/**
 * The slots of an embedding table's 64-bit ids: open addressing with linear probing, no boxing and
 * no tombstones (a removal shifts the entries of its run back), so lookups stay short after any
 * number of evictions. Every 64-bit id is a valid key, and distinct ids never share a slot. Not
 * thread-safe: the table that owns it serializes access.
 */
final class IdSlots {
  private static final int EMPTY = -1;
  private static final double MAX_LOAD = 0.6;

  private long[] keys;
  private int[] slots;
  private int mask;
  private int size;

  IdSlots(int expected) {
    int capacity = 16;
    while (capacity * MAX_LOAD < expected && capacity < 1 << 30) {
      capacity <<= 1;
    }
    allocate(capacity);
  }

  /** Ids held. */
  int size() {
    return size;
  }

  /** The slot of {@code id}, or -1. */
  int get(long id) {
    for (int i = index(id);; i = (i + 1) & mask) {
      if (slots[i] == EMPTY) {
        return EMPTY;
      }
      if (keys[i] == id) {
        return slots[i];
      }
    }
  }

  /** Maps {@code id} to {@code slot} (replacing an earlier slot of it). */
  void put(long id, int slot) {
    if (slot < 0) {
      throw new IllegalArgumentException("slot must be >= 0, got " + slot);
    }
    if (size + 1 > (mask + 1) * MAX_LOAD) {
      grow();
    }
    int i = index(id);
    while (slots[i] != EMPTY && keys[i] != id) {
      i = (i + 1) & mask;
    }
    if (slots[i] == EMPTY) {
      size++;
    }
    keys[i] = id;
    slots[i] = slot;
  }

  /** Removes {@code id}; its slot, or -1 when it was not here. */
  int remove(long id) {
    int i = index(id);
    while (slots[i] != EMPTY && keys[i] != id) {
      i = (i + 1) & mask;
    }
    if (slots[i] == EMPTY) {
      return EMPTY;
    }
    int removed = slots[i];
    // Backward shift: move up each later entry of the run whose home is not between the hole and it.
    for (int hole = i, j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (slots[j] == EMPTY) {
        slots[hole] = EMPTY;
        break;
      }
      int home = index(keys[j]);
      boolean stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        keys[hole] = keys[j];
        slots[hole] = slots[j];
        hole = j;
      }
    }
    size--;
    return removed;
  }

  private int index(long id) {
    long h = id * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32)) & mask;
  }

  private void allocate(int capacity) {
    keys = new long[capacity];
    slots = new int[capacity];
    Arrays.fill(slots, EMPTY);
    mask = capacity - 1;
    size = 0;
  }

  private void grow() {
    if (mask + 1 >= 1 << 30) {
      throw new IllegalStateException("an embedding shard's id index cannot grow past 2^30 entries");
    }
    long[] oldKeys = keys;
    int[] oldSlots = slots;
    allocate((mask + 1) * 2);
    for (int i = 0; i < oldKeys.length; i++) {
      if (oldSlots[i] != EMPTY) {
        put(oldKeys[i], oldSlots[i]);
      }
    }
  }
}
