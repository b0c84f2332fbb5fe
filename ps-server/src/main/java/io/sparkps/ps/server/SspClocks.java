package io.sparkps.ps.server;

import java.util.ArrayList;
import java.util.List;

/**
 * The clocks of an SSP group's workers on one shard (each the step after the worker's last push),
 * for the dense variables of the group and for each of its embedding tables alike: a read at
 * clock {@code c} with staleness {@code s} waits until every worker reached {@code c - s}. Not
 * thread-safe: guarded by the owner.
 */
final class SspClocks {
  private final long[] clocks;

  SspClocks(int workers) {
    this.clocks = new long[Math.max(0, workers)];
  }

  /** Records that {@code worker} pushed step {@code step}. */
  void advance(int worker, long step) {
    clocks[worker] = Math.max(clocks[worker], step + 1);
  }

  /** The workers a read at {@code clock} waits for under {@code staleness}; empty: none. */
  List<Integer> behind(long clock, long staleness) {
    long needed = clock - staleness;
    List<Integer> slow = new ArrayList<>();
    for (int w = 0; w < clocks.length; w++) {
      if (clocks[w] < needed) {
        slow.add(w);
      }
    }
    return slow;
  }

  /** Moves every worker's clock up to at least {@code clock} (a restored shard knows no one's). */
  void raise(long clock) {
    for (int w = 0; w < clocks.length; w++) {
      clocks[w] = Math.max(clocks[w], clock);
    }
  }

  long[] values() {
    return clocks.clone();
  }

  void restore(long[] saved) {
    System.arraycopy(saved, 0, clocks, 0, Math.min(saved.length, clocks.length));
  }
}
