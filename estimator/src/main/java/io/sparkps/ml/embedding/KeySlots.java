package io.sparkps.ml.embedding;

/**
 * A set of 64-bit keys, each with a slot (0, 1, ... in the order added), in primitive arrays with
 * open addressing: a minibatch's unique keys, or a partition's when scoring by a join.
 */
public final class KeySlots {
  private long[] table;
  private int[] slots;
  private boolean[] used;
  private long[] order;
  private int size;

  /** An empty set sized for about {@code expected} keys (it grows past them). */
  public KeySlots(int expected) {
    int capacity = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
    table = new long[capacity];
    slots = new int[capacity];
    used = new boolean[capacity];
    order = new long[Math.max(16, expected)];
  }

  /** The key's slot; when absent, a new one if {@code add}, else -1. */
  public int slot(long key, boolean add) {
    int mask = table.length - 1;
    int i = index(key, mask);
    while (used[i]) {
      if (table[i] == key) {
        return slots[i];
      }
      i = (i + 1) & mask;
    }
    if (!add) {
      return -1;
    }
    if (size == order.length) {
      order = java.util.Arrays.copyOf(order, size * 2);
    }
    order[size] = key;
    used[i] = true;
    table[i] = key;
    slots[i] = size++;
    if (size * 2 > table.length) {
      grow();
    }
    return size - 1;
  }

  private void grow() {
    long[] keys = java.util.Arrays.copyOf(order, size);
    table = new long[table.length * 2];
    slots = new int[table.length];
    used = new boolean[table.length];
    int mask = table.length - 1;
    for (int s = 0; s < keys.length; s++) {
      int i = index(keys[s], mask);
      while (used[i]) {
        i = (i + 1) & mask;
      }
      used[i] = true;
      table[i] = keys[s];
      slots[i] = s;
    }
  }

  private static int index(long key, int mask) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32)) & mask;
  }

  /** The keys, in the order of their slots. */
  public long[] keys() {
    return java.util.Arrays.copyOf(order, size);
  }

  /** Keys held. */
  public int size() {
    return size;
  }
}
