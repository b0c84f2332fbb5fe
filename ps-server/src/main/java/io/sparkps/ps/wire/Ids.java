package io.sparkps.ps.wire;

/** How embedding ids are hashed: the one mixer of ps and client, and the ps an id lives on. */
@Internal
public final class Ids {
  private Ids() {}

  /** SplitMix64's finalizer: a bijection of the longs that scatters nearby ids. */
  public static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** The ps, of {@code numShards}, that holds {@code id}'s row. */
  public static int shardOf(long id, int numShards) {
    return (int) Math.floorMod(mix(id), (long) numShards);
  }
}
