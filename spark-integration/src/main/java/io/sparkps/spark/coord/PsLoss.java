package io.sparkps.spark.coord;

/** A ps declared lost, and (once known) its replacement and what refilled it. */
public record PsLoss(int shard, String lostAddress, String reason, long atStep, long lostNanos, String replacement,
    String source, long restoredAtStep, long restoredNanos) {}
