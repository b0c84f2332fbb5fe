package io.sparkps.ml;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * When the chief saves its next checkpoint under the automatic interval ({@code checkpointInterval}
 * 0): once the time since its last save ended is at least {@link #COST_FACTOR} times what that save
 * took, and at least {@link #MIN_SPACING}, so saving takes at most 1% of the chief's time (in a SYNC
 * run the others wait for it at the next step: 1% of theirs too). The first save is due
 * {@link #MIN_SPACING} after training starts: a JVM's first save costs more than the later ones
 * (classes loaded: measured 0.18 s against 0.1 s for the small MLP, 0.47 s on a busy machine), and
 * even that one stays under 2% of the run before it. Used by the chief's training thread only.
 */
final class SaveClock {
  /** The time between saves, in units of the last save's duration. */
  static final int COST_FACTOR = 100;
  /** The least time between saves (and before the first). */
  static final Duration MIN_SPACING = Duration.ofSeconds(30);
  private final LongSupplier nanos;
  private long next;

  /** A clock reading {@code nanos} (System::nanoTime; tests move time by hand). */
  SaveClock(LongSupplier nanos) {
    this.nanos = nanos;
    this.next = nanos.getAsLong() + MIN_SPACING.toNanos();
  }

  /** Whether a save is due now. */
  boolean isDue() {
    return nanos.getAsLong() - next >= 0;
  }

  /** A save just ended, having taken {@code tookNanos}: the next is due 100 times that later (30 s at least). */
  void saved(long tookNanos) {
    next = nanos.getAsLong() + Math.max(MIN_SPACING.toNanos(), COST_FACTOR * tookNanos);
  }
}
