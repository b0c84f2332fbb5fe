package io.sparkps.spark.coord;

/**
 * The registry's entry for a ps declared lost: when (on the registry's clock), and once known its
 * replacement and what refilled it. A run reports it as a {@code PsRecovery}.
 */
public record PsLoss(int shard, String lostAddress, String reason, long atStep, long lostNanos, String replacement,
    String source, long restoredAtStep, long restoredNanos) {}
