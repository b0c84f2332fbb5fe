package io.sparkps.ml.data;

import java.util.Random;
import java.util.function.IntUnaryOperator;

/**
 * One epoch's order of a spill file's blocks, seeded: the blocks shuffled, then taken a window of
 * blocks at a time, the rows of each window shuffled by the window's own seed. A spilled partition
 * is so read one window at a time, yet every row comes once an epoch.
 */
public final class BlockOrder {
  private final int[] order;
  private final int windowBlocks;
  private final IntUnaryOperator rowsIn;
  private final long seed;

  /**
   * The order of {@code blocks} blocks, block b holding {@code rowsIn(b)} rows, taken
   * {@code windowBlocks} at a time, drawn from {@code seed}.
   */
  public BlockOrder(int blocks, int windowBlocks, IntUnaryOperator rowsIn, long seed) {
    this.order = new int[blocks];
    for (int i = 0; i < blocks; i++) {
      order[i] = i;
    }
    shuffle(order, new Random(seed));
    this.windowBlocks = windowBlocks;
    this.rowsIn = rowsIn;
    this.seed = seed;
  }

  /** Windows in the epoch. */
  public int windows() {
    return (order.length + windowBlocks - 1) / windowBlocks;
  }

  /** The blocks of window {@code w}, in the order they are taken. */
  public int[] blocks(int w) {
    int first = w * windowBlocks;
    return java.util.Arrays.copyOfRange(order, first, Math.min(order.length, first + windowBlocks));
  }

  /** Rows in window {@code w}. */
  public long rows(int w) {
    long n = 0;
    for (int b : blocks(w)) {
      n += rowsIn.applyAsInt(b);
    }
    return n;
  }

  /** Where row {@code skip} of the epoch's order lies: its window, and its place in that window. */
  public long[] locate(long skip) {
    int w = 0;
    for (long n = rows(0); skip >= n; n = rows(++w)) {
      skip -= n;
    }
    return new long[] {w, skip};
  }

  /** Shuffles window {@code w}'s rows, {@code rows}, by its seed. */
  public void shuffleRows(int w, int[] rows) {
    shuffle(rows, new Random(seed * 1_000_003L + w));
  }

  /** A Fisher-Yates shuffle of {@code a} drawn from {@code random}. */
  public static void shuffle(int[] a, Random random) {
    for (int i = a.length - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}
