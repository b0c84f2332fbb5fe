package io.sparkps.ml.checkpoint;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SaveClockTest {
  private final AtomicLong now = new AtomicLong(1_000);
  private final SaveClock clock = new SaveClock(now::get);

  private void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  @Test
  void firstSave_isDueAfterTheLeastSpacing() {
    advance(SaveClock.MIN_SPACING.minusMillis(1));
    assertFalse(clock.isDue());
    advance(Duration.ofMillis(1));
    assertTrue(clock.isDue());
  }

  @Test
  void aSlowSave_spacesTheNextAHundredTimesItsDuration_soSavingTakesAtMostOnePercent() {
    advance(SaveClock.MIN_SPACING);
    clock.saved(Duration.ofMillis(5).toNanos());
    advance(SaveClock.MIN_SPACING);
    clock.saved(Duration.ofMillis(500).toNanos());
    advance(Duration.ofSeconds(49));
    assertFalse(clock.isDue(), "50 s after a save of 0.5 s, not 49");
    advance(Duration.ofSeconds(1));
    assertTrue(clock.isDue());
  }

  @Test
  void aFastSave_keepsTheLeastSpacing() {
    advance(SaveClock.MIN_SPACING);
    clock.saved(Duration.ofMillis(2).toNanos());
    advance(SaveClock.MIN_SPACING.minusMillis(1));
    assertFalse(clock.isDue());
    advance(Duration.ofMillis(1));
    assertTrue(clock.isDue());
  }

  @Test
  void theFirstSavesDuration_theJvmsWarmUp_doesNotSpaceTheNext() {
    advance(SaveClock.MIN_SPACING);
    clock.saved(Duration.ofSeconds(2).toNanos());
    advance(SaveClock.MIN_SPACING.minusMillis(1));
    assertFalse(clock.isDue());
    advance(Duration.ofMillis(1));
    assertTrue(clock.isDue(), "due after the least spacing, not 200 s after a first save of 2 s");
  }

  @Test
  void stateCopies_comeFirstAtOnce_thenEverySecondAtLeast_andAHundredTimesTheirDuration() {
    SaveClock copies = SaveClock.forStateCopies(now::get);
    assertTrue(copies.isDue(), "the first copy is due at once");
    copies.saved(Duration.ofMillis(150).toNanos());
    advance(Duration.ofMillis(999));
    assertFalse(copies.isDue());
    advance(Duration.ofMillis(1));
    assertTrue(copies.isDue(), "1 s after a first copy of 150 ms (the warm-up's), not 15 s");
    copies.saved(Duration.ofMillis(5).toNanos());
    advance(Duration.ofMillis(999));
    assertFalse(copies.isDue());
    advance(Duration.ofMillis(1));
    assertTrue(copies.isDue());
    copies.saved(Duration.ofMillis(5).toNanos());
    advance(Duration.ofMillis(999));
    assertFalse(copies.isDue(), "1 s after a copy of 5 ms, not 0.999");
    advance(Duration.ofMillis(1));
    assertTrue(copies.isDue());
    copies.saved(Duration.ofMillis(40).toNanos());
    advance(Duration.ofMillis(3999));
    assertFalse(copies.isDue(), "4 s after a copy of 40 ms");
    advance(Duration.ofMillis(1));
    assertTrue(copies.isDue());
  }
}
