package io.sparkps.ps.client;

import io.sparkps.ps.ShardRecovery;
import io.sparkps.ps.annotation.Internal;

/**
 * Where a replaced ps's embedding tables come back from: a worker holds no copy of a whole table
 * (only the rows of its last pull), so a client that refills a replacement (see
 * {@link ShardRecovery}) recreates the shard's tables and restores its share of their rows from the
 * newest checkpoint this names (rows, optimizer state and update counts as of that step), then sets
 * the rows it last pulled to the values it pulled (fresher); the other rows' updates since the
 * checkpoint are lost, and said so. Set it with {@link GrpcPsClient#setTableRefill}; without one, or
 * with no checkpoint yet, the tables start empty on the replacement but for the rows the refilling
 * worker last pulled (the others are lost, and said so).
 */
@FunctionalInterface
@Internal
public interface TableRefill {
  /** A checkpoint: its directory (a Hadoop path every ps reaches) and its step. */
  record Checkpoint(String dir, long step) {}

  /** The newest checkpoint holding the tables, or null when there is none yet. */
  Checkpoint latest();
}
