package io.sparkps.ps.server;

import io.sparkps.ps.wire.Ids;

/**
 * Admission by count: an id gets a row once seen {@code minCount} times. Counts are kept in a
 * count-min sketch (4 hashes over at least 4 counters per row the table may hold), so ids that
 * never reach the count cost no row; a sketch overcounts, never undercounts, so an admitted id
 * was seen at least {@code minCount} times or collided with ones that were.
 */
final class Admission {
  private static final int HASHES = 4;
  private final int minCount;
  private final int[] counts;
  private final int mask;
  private final int[] at = new int[HASHES]; // the counters of the id being counted (calls are serialized)

  Admission(int minCount, int maxRows) {
    this.minCount = minCount;
    int width = 1024;
    while (width < 4L * maxRows && width < 1 << 26) {
      width <<= 1;
    }
    this.counts = new int[HASHES * width];
    this.mask = width - 1;
  }

  boolean admit(long id) {
    int least = Integer.MAX_VALUE;
    for (int h = 0; h < HASHES; h++) {
      at[h] = h * (mask + 1) + (int) (Ids.mix(id + h * 0x632BE59BD9B4E019L) & mask);
      least = Math.min(least, counts[at[h]]);
    }
    for (int h = 0; h < HASHES; h++) {
      if (counts[at[h]] == least && least < Integer.MAX_VALUE) {
        counts[at[h]]++; // conservative update: only the smallest counters grow
      }
    }
    return least + 1 >= minCount;
  }
}
