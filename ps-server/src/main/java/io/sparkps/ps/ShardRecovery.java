package io.sparkps.ps;

import io.sparkps.ps.spec.PsUnavailableException;

/**
 * How a {@link PsClient} survives the loss of a ps shard: the run's supervisor (the coordinator
 * of a Spark run) relaunches the shard and tells clients where its replacement serves. A client
 * whose call to a shard fails as unreachable or timed out asks here; when the shard was replaced,
 * a worker holding a copy of all the shard's variables (its last pull) recreates the shard's groups
 * and slices there and refills them (the first refill wins, later ones join it); other clients wait
 * for that refill. Then the failed part of the call is repeated. Without a {@code ShardRecovery}
 * such failures are thrown as they are.
 */
public interface ShardRecovery {
  /**
   * The address of shard {@code shard}'s replacement once it serves (an address other than
   * {@code lostAddress}), or null when the shard is still serving at {@code lostAddress} (the
   * failure was not a lost shard). Waits a bounded time; throws a {@link PsUnavailableException}
   * naming what it waited for when no replacement came.
   */
  String awaitReplacement(int shard, String lostAddress) throws InterruptedException;

  /**
   * This client refilled the replacement of {@code shard} at its step {@code step} from
   * {@code source} (for example "worker 1's copy of step 42; optimizer state of step 40", or "...;
   * optimizer state started afresh" when the copy held none).
   */
  default void restored(int shard, long step, String source) {}

  /**
   * Whether this client refills a replacement from its copy (a training worker), or only waits,
   * bounded by {@code refillWait}, until another client has (an evaluator, whose copy is older).
   */
  default boolean refills() {
    return true;
  }

  /**
   * Asks whoever keeps copies of the run's variables from an earlier attempt (the workers' copies
   * that outlived their tasks) to refill {@code shards}, whose state was lost; whether anyone may
   * answer (false when there was no earlier attempt, or no supervisor to ask).
   */
  default boolean requestRefill(java.util.Collection<Integer> shards) {
    return false;
  }

  /** How long a client that does not refill waits for the refill. */
  default java.time.Duration refillWait() {
    return java.time.Duration.ofMinutes(2);
  }
}
