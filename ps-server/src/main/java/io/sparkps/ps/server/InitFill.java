package io.sparkps.ps.server;

import io.sparkps.ps.wire.PsError;

import io.sparkps.ps.grpc.proto.InitializerSpec;

/**
 * Fills a slice from its variable's initializer. Random values are a pure function of the seed
 * and the element's index in the whole variable (a SplitMix64 hash), so any shard layout and any
 * initializing task give the same tensor.
 */
final class InitFill {
  private static final double TWO_POW_MINUS_53 = 0x1.0p-53;

  private InitFill() {}

  /** Writes {@code dst.length} elements starting at element {@code offset} of the variable. */
  static void fill(InitializerSpec init, float[] dst, long offset) {
    switch (init.getKind()) {
      case ZEROS -> java.util.Arrays.fill(dst, 0f);
      case CONSTANT -> java.util.Arrays.fill(dst, (float) init.getA());
      case UNIFORM -> {
        double span = init.getB() - init.getA();
        for (int i = 0; i < dst.length; i++) {
          dst[i] = (float) (init.getA() + span * unit(init.getSeed(), 2 * (offset + i)));
        }
      }
      case NORMAL -> {
        for (int i = 0; i < dst.length; i++) {
          long index = 2 * (offset + i);
          double u1 = 1.0 - unit(init.getSeed(), index);
          double u2 = unit(init.getSeed(), index + 1);
          double z = Math.sqrt(-2.0 * Math.log(u1)) * Math.cos(2.0 * Math.PI * u2);
          dst[i] = (float) (init.getA() + init.getB() * z);
        }
      }
      default -> throw PsError.invalid("initializer " + init.getKind() + " needs values sent by the client");
    }
  }

  /** A uniform double in [0, 1) from (seed, counter). */
  private static double unit(long seed, long counter) {
    long z = seed + (counter + 1) * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z = z ^ (z >>> 31);
    return (z >>> 11) * TWO_POW_MINUS_53;
  }
}
