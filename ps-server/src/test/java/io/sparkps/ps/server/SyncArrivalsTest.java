package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.wire.PsError;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The one SYNC step rule and the one SSP clock rule that dense slices and tables share. */
class SyncArrivalsTest {
  @Test
  void aStepCompletesWhenItsLastWorkerArrives_andARepeatIsKnown() {
    SyncArrivals step = new SyncArrivals();
    long at = 7;
    assertFalse(step.isRepeat(1, at, at), "nothing arrived yet");
    assertTrue(step.isRepeat(1, at - 1, at), "a push of a step already complete is a retry");
    assertFalse(step.arrive(1, 3));
    assertTrue(step.isRepeat(1, at, at), "worker 1's second push of the step is a retry");
    assertFalse(step.isRepeat(0, at, at));
    assertEquals(List.of(0, 2), step.missing(3));
    assertFalse(step.arrive(2, 3));
    assertEquals(List.of(0), step.missing(3));
    assertTrue(step.arrive(0, 3), "the third of three workers completes the step");
    step.clear();
    assertEquals(List.of(0, 1, 2), step.missing(3));
    assertFalse(step.has(1));
  }

  @Test
  void aPushAhead_isRefusedNamingTheStepsAndTheFix() {
    PsError e = SyncArrivals.ahead("embedding table 'items' on ps 1", 0, "gradients", 5, "table", 3);
    assertTrue(e.getMessage().contains("embedding table 'items' on ps 1: worker 0 pushed gradients for SYNC step 5 "
        + "but the table is at step 3 (pull before each push"), e.getMessage());
  }

  @Test
  void anSspReadWaitsForTheWorkersBehindItsClockLessTheStaleness() {
    SspClocks clocks = new SspClocks(3);
    clocks.advance(0, 4);
    clocks.advance(1, 2);
    assertEquals(List.of(1, 2), clocks.behind(6, 1), "clock 6, staleness 1: everyone must have reached 5");
    assertEquals(List.of(2), clocks.behind(4, 1));
    clocks.raise(3);
    assertEquals(List.of(), clocks.behind(4, 1));
    clocks.advance(1, 0);
    assertEquals(3, clocks.values()[1], "a clock never goes back");
  }
}
