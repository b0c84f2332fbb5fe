package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.InitializerSpec;
import org.junit.jupiter.api.Test;

/** The shards' initializers: the stated distributions, and the same tensor whatever the slicing. */
class InitFillTest {
  private static final int N = 200_000;

  private static InitializerSpec spec(InitializerKind kind, double a, double b) {
    return InitializerSpec.newBuilder().setKind(kind).setA(a).setB(b).setSeed(42).build();
  }

  private static float[] fill(InitializerSpec init, int length, long offset) {
    float[] out = new float[length];
    InitFill.fill(init, out, offset);
    return out;
  }

  @Test
  void uniform_liesInItsRange_withItsMeanAndVariance() {
    float[] v = fill(spec(InitializerKind.UNIFORM, -2, 5), N, 0);
    double sum = 0;
    double squares = 0;
    float min = Float.MAX_VALUE;
    float max = -Float.MAX_VALUE;
    for (float x : v) {
      sum += x;
      squares += x * x;
      min = Math.min(min, x);
      max = Math.max(max, x);
    }
    double mean = sum / N;
    double variance = squares / N - mean * mean;
    assertTrue(min >= -2 && max < 5 && min < -1.99 && max > 4.99, "range [" + min + ", " + max + "]");
    assertEquals(1.5, mean, 0.03, "mean of U(-2, 5)");
    assertEquals(49.0 / 12, variance, 0.05, "variance of U(-2, 5)");
  }

  @Test
  void normal_hasItsMeanAndStandardDeviation_andTheNormalsShape() {
    float[] v = fill(spec(InitializerKind.NORMAL, 1, 3), N, 0);
    double sum = 0;
    double squares = 0;
    int withinOneSigma = 0;
    for (float x : v) {
      assertTrue(Float.isFinite(x), "finite: " + x);
      sum += x;
      squares += x * x;
      withinOneSigma += Math.abs(x - 1) < 3 ? 1 : 0;
    }
    double mean = sum / N;
    assertEquals(1, mean, 0.03, "mean of N(1, 3)");
    assertEquals(3, Math.sqrt(squares / N - mean * mean), 0.03, "standard deviation of N(1, 3)");
    assertEquals(0.6827, withinOneSigma / (double) N, 0.005, "share within one standard deviation");
  }

  @Test
  void anySlicing_givesTheSameTensor_andNeighboursDiffer() {
    for (InitializerKind kind : new InitializerKind[] {InitializerKind.UNIFORM, InitializerKind.NORMAL}) {
      InitializerSpec init = spec(kind, 0, 1);
      float[] whole = fill(init, 1000, 0);
      float[] joined = new float[1000];
      System.arraycopy(fill(init, 377, 0), 0, joined, 0, 377);
      System.arraycopy(fill(init, 623, 377), 0, joined, 377, 623);
      assertArrayEquals(whole, joined, kind + ": a slice at offset 377 continues the tensor");
      assertTrue(whole[0] != whole[1] && whole[1] != whole[2], kind + ": neighbours differ");
      float[] otherSeed = new float[10];
      InitFill.fill(init.toBuilder().setSeed(43).build(), otherSeed, 0);
      assertTrue(otherSeed[0] != whole[0], kind + ": another seed, other values");
    }
    assertArrayEquals(new float[] {2.5f, 2.5f}, fill(spec(InitializerKind.CONSTANT, 2.5, 0), 2, 7));
  }
}
