package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;

/** How the ps hashes embedding ids (their initial values, admission); which ps holds an id is {@code EmbeddingTable.shardOf}. */
@Internal
public final class Ids {
  private Ids() {}

  /** SplitMix64's finalizer: a bijection of the longs that scatters nearby ids. */
  public static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
