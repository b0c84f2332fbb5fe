package io.sparkps.ml.checkpoint;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * When the chief saves its next checkpoint under the automatic interval ({@code checkpointInterval}
 * 0): once the time since its last save ended is at least {@link #COST_FACTOR} times what that save
 * took, and at least {@link #MIN_SPACING}, so saving takes at most 1% of the chief's time (in a SYNC
 * run the others wait for it at the next step: 1% of theirs too). The first save is due
 * {@link #MIN_SPACING} after training starts, and the second {@link #MIN_SPACING} after the first:
 * a JVM's first save costs more than the later ones (classes loaded: measured 0.18 s against 0.1 s
 * for the small MLP, 0.47 s on a busy machine), and even that one stays under 2% of the run before
 * it. Used by the chief's training thread only.
 */
public final class SaveClock {
  /** The time between saves, in units of the last save's duration. */
  public static final int COST_FACTOR = 100;
  /** The least time between saves (and before the first). */
  public static final Duration MIN_SPACING = Duration.ofSeconds(30);
  /**
   * The least time between a worker's copies of the optimizer state ({@link #forStateCopies}); each
   * costs a read of the state arrays.
   */
  public static final Duration STATE_COPY_SPACING = Duration.ofSeconds(1);
  private final LongSupplier nanos;
  private final long minSpacing;
  private long next;
  private long saves;

  /** A clock of checkpoints reading {@code nanos} (System::nanoTime; tests move time by hand). */
  public SaveClock(LongSupplier nanos) {
    this(nanos, MIN_SPACING, nanos.getAsLong() + MIN_SPACING.toNanos());
  }

  private SaveClock(LongSupplier nanos, Duration minSpacing, long first) {
    this.nanos = nanos;
    this.minSpacing = minSpacing.toNanos();
    this.next = first;
  }

  /**
   * A clock of a worker's copies of the optimizer state beside its copy of the values
   * ({@code PsClient.copyOptimizerState}): the first at once (after the first step: a shard may be
   * lost early, and a copy of few steps still counts them for Adam's bias correction), then by the
   * same rule, at least {@link #STATE_COPY_SPACING} apart.
   */
  public static SaveClock forStateCopies(LongSupplier nanos) {
    return new SaveClock(nanos, STATE_COPY_SPACING, nanos.getAsLong());
  }

  /** Whether a save was made with this clock yet. */
  public boolean hasSaved() {
    return saves > 0;
  }

  /** Whether a save is due now. */
  public boolean isDue() {
    return nanos.getAsLong() - next >= 0;
  }

  /**
   * A save just ended, having taken {@code tookNanos}: the next is due 100 times that later (the
   * least spacing at least). The first save's duration does not count: it pays for the JVM's warm-up
   * (classes loaded, code compiled), which the later saves do not. A first copy of the optimizer
   * state took over 100 ms where the later ones took a few, and spaced the second so far that a ps
   * lost at step 107 of 156 came back with Adam's moments of step 1.
   */
  public void saved(long tookNanos) {
    next = nanos.getAsLong() + (saves == 0 ? minSpacing : Math.max(minSpacing, COST_FACTOR * tookNanos));
    saves++;
  }
}
