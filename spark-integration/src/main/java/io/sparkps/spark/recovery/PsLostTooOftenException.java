package io.sparkps.spark.recovery;

/** The supervisor gave up on a ps: it was lost more often than the run allows. */
public final class PsLostTooOftenException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int shard;
  private final int launches;

  PsLostTooOftenException(int shard, int launches, String message) {
    super(message);
    this.shard = shard;
    this.launches = launches;
  }

  /** The index of the ps given up on. */
  public int shard() {
    return shard;
  }

  /** How many times it was launched. */
  public int launches() {
    return launches;
  }
}
