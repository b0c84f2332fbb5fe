package io.sparkps.spark.recovery;

import java.time.Duration;

/**
 * A ps task the run lost and recovered without stopping: which shard, when and why, where its
 * replacement serves and what its state came from. The coordinator's registry keeps each loss as
 * a {@code PsLoss} stamped by its clock; this is its report.
 *
 * @param shard the ps index
 * @param lostAddress where it served before
 * @param reason why it was declared lost (its task failed, or it was silent for longer than the role timeout)
 * @param atStep the furthest worker step when it was lost
 * @param replacement where its replacement serves, or null if none registered (the run then failed)
 * @param source what refilled the replacement (a worker's copy of a step, or the checkpoint every shard rolled back to), or null if not refilled
 * @param restoredAtStep the restoring worker's step
 * @param downtime from the loss being noticed to the replacement being refilled (or to now, if it was not)
 */
public record PsRecovery(int shard, String lostAddress, String reason, long atStep, String replacement, String source,
    long restoredAtStep, Duration downtime) {
  @Override
  public String toString() {
    return "ps " + shard + " (" + lostAddress + ") lost at step " + atStep + " (" + reason + "): "
        + (replacement == null ? "no replacement registered"
            : "replaced by " + replacement + (source == null ? ", not refilled yet"
                : ", refilled at step " + restoredAtStep + " from " + source))
        + " after " + downtime.toMillis() + " ms";
  }

}
