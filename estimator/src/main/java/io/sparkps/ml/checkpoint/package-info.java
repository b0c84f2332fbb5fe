/**
 * Internal: a run's checkpoints (saving, the chain of markers, restoring into the shards), the
 * fit's own checkpoint directory when none is set, when the next save is due, and the state the
 * chief finds on the servers at a start or a retry.
 */
package io.sparkps.ml.checkpoint;
