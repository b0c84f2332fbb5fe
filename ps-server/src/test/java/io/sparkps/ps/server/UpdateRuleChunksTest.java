package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.wire.FiniteCheck;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A gradient at another offset than its weights (a variable after the first in an update's
 * payload), or one regularized first, is updated a chunk at a time: the result must be exactly
 * what the rule gives each value on its own, across chunk boundaries and at both ends.
 */
class UpdateRuleChunksTest {
  private static final int N = 3 * UpdateRule.CHUNK + 123;
  private static final int W_OFF = 17;
  private static final int G_OFF = 1_000;

  static Stream<OptimizerConfig> rules() {
    return Stream.of(OptimizerConfig.sgd(0.1), OptimizerConfig.momentum(0.05, 0.9), OptimizerConfig.nesterov(0.05, 0.9),
        OptimizerConfig.adam(0.01), OptimizerConfig.adaGrad(0.1), OptimizerConfig.rmsProp(0.01),
        OptimizerConfig.adam(0.01).withL2(0.01).withL1(0.001), OptimizerConfig.nesterov(0.05, 0.9).withWeightDecay(0.01, true),
        OptimizerConfig.sgd(0.1).withWeightDecay(0.02, false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("rules")
  void chunkedUpdate_equalsEachValueUpdatedAlone(OptimizerConfig config) {
    Random random = new Random(3);
    int size = W_OFF + N + 5;
    float[] start = new float[size];
    for (int i = 0; i < size; i++) {
      start[i] = (float) random.nextGaussian();
    }
    float[] whole = start.clone();
    float[] alone = start.clone();
    UpdateRule wholeRule = new UpdateRule(config, size);
    UpdateRule aloneRule = new UpdateRule(config, size);
    for (long step = 0; step < 3; step++) {
      float[] g = new float[G_OFF + N];
      for (int i = 0; i < g.length; i++) {
        g[i] = (float) random.nextGaussian();
      }
      wholeRule.apply(whole, W_OFF, g, G_OFF, N, step);
      for (int i = 0; i < N; i++) {
        aloneRule.apply(alone, W_OFF + i, g, G_OFF + i, 1, step);
      }
    }
    assertArrayEquals(alone, whole, config + ": every value as if updated alone");
    for (int i : new int[] {0, W_OFF - 1, W_OFF + N, size - 1}) {
      assertEquals(start[i], whole[i], "value " + i + " outside the updated range is left");
    }
    assertTrue(Math.abs(whole[W_OFF + N - 1] - start[W_OFF + N - 1]) > 0 || config.kind().name().equals("NO_OP"),
        "the last value moved");
  }

  @Test
  void finiteCheck_findsTheFirstNanOrInfinity_andPassesEveryFiniteValue() {
    float[] values = {0f, -0f, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE, Float.MIN_NORMAL, 1e-40f, -3.5f};
    assertEquals(-1, FiniteCheck.firstNonFinite(values, 0, values.length));
    for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
        Float.intBitsToFloat(0xffc00001)}) {
      float[] a = new float[100];
      a[61] = bad;
      a[80] = bad;
      assertEquals(61, FiniteCheck.firstNonFinite(a, 0, 100), "first of " + bad);
      assertEquals(21, FiniteCheck.firstNonFinite(a, 40, 60), "relative to where the check starts");
      assertEquals(-1, FiniteCheck.firstNonFinite(a, 0, 61), "before it");
    }
  }
}
