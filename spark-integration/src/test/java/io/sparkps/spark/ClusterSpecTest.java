package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The spec's newer options: their defaults, and bad values refused naming the field. */
class ClusterSpecTest {
  private static ClusterSpec.Builder spec() {
    return ClusterSpec.builder().setNumPs(1).setNumWorkers(2).optHeartbeatInterval(Duration.ofMillis(500));
  }

  @Test
  void evaluatorGrace_defaultsToThreeHeartbeatsAndTenSeconds_orTakesTheGivenOne() {
    assertEquals(Duration.ofMillis(11_500), spec().build().evaluatorGrace());
    assertEquals(Duration.ofMinutes(30), spec().optEvaluatorGrace(Duration.ofMinutes(30)).build().evaluatorGrace());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> spec().optEvaluatorGrace(Duration.ZERO).build());
    assertTrue(e.getMessage().startsWith("evaluatorGrace must be > 0"), e.getMessage());
  }

  @Test
  void bf16Transfers_areOffUnlessAsked() {
    assertFalse(spec().build().bf16Transfers());
    assertTrue(spec().optBf16Transfers(true).build().bf16Transfers());
  }

  @Test
  void sparseTransfers_areOffUnlessAsked_takeADensity_andExcludeBf16() {
    assertEquals(0.0, spec().build().sparseDensity());
    assertEquals(0.01, spec().optSparseTransfers(0.01).build().sparseDensity());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> spec().optSparseTransfers(-0.1));
    assertTrue(e.getMessage().startsWith("sparse transfer density -0.1 is not within [0, 1]"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> spec().optSparseTransfers(0.01).optBf16Transfers(true).build());
    assertTrue(e.getMessage().startsWith("bf16Transfers and sparseTransfers are exclusive"), e.getMessage());
  }
}
