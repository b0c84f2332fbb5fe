package io.sparkps.ps;

import io.sparkps.ps.spec.EmbeddingSpec;

/**
 * A client's handle on an embedding table ({@link PsClient#embeddingTable}): pulls the rows of a
 * minibatch's ids and pushes their gradients, each id to the ps its hash places it on, the ps in
 * parallel. Only the ids asked for travel, so bytes per step scale with the ids a step touches,
 * not with the table. Pass each id once per call (a minibatch's unique ids, gradients summed).
 * A model of several tables pulls and pushes them together, one call per ps: {@link EmbeddingTableSet}.
 * Thread-safe as its client is; closing the client ends it.
 */
public interface EmbeddingTable {
  /**
   * The ps that holds {@code id}'s row, of {@code numShards}: a hash of the id (SplitMix64's
   * finalizer, a bijection of the longs), so neighbouring ids spread.
   */
  static int shardOf(long id, int numShards) {
    long z = id;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return (int) Math.floorMod(z ^ (z >>> 31), (long) numShards);
  }

  /** The table's spec. */
  EmbeddingSpec spec();

  /**
   * The rows of {@code ids} for training step {@code step}, row after row ({@code ids.length * dim}
   * floats): an id seen often enough gets a row of its own, one not admitted yet reads the default row.
   * For a SYNC table it waits until every worker's step {@code step - 1} is applied (SSP: until the
   * slowest is within the staleness), at most the client's wait timeout.
   */
  float[] pull(long[] ids, long step);

  /** The rows of {@code ids} without creating any (inference): an id the table does not hold reads the default row. */
  float[] read(long[] ids);

  /**
   * Applies {@code gradients} ({@code ids.length * dim} floats, row after row) to the rows of
   * {@code ids}: at once, or for a SYNC table with the other workers' of step {@code step} (their
   * mean, once every worker pushed the step; a SYNC or SSP push goes to every ps, empty where it
   * holds none of the ids, so each ps knows the worker's step is done).
   */
  void push(long[] ids, float[] gradients, long step);
}
