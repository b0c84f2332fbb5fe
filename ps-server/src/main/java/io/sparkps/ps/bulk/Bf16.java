package io.sparkps.ps.bulk;

import io.sparkps.ps.annotation.Internal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * bfloat16 on the bulk wire: a float32's sign, exponent and top 7 mantissa bits, rounded to the
 * nearest even; half the bytes, float32's range, about 3 significant decimal digits. NaN stays
 * NaN and infinities stay infinite, so the shard's finiteness check still sees them; a finite
 * value above bfloat16's largest (about 3.39e38) rounds to infinity and is refused like one.
 */
@Internal
public final class Bf16 {
  private Bf16() {}

  /** The bfloat16 nearest to {@code f} (ties to even). */
  public static short encode(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return (short) ((bits >>> 16) | 0x0040); // NaN: keep it a (quiet) NaN
    }
    return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
  }

  /** The float32 a bfloat16 stands for (exact). */
  public static float decode(short h) {
    return Float.intBitsToFloat((h & 0xffff) << 16);
  }

  /** Encodes the little-endian floats of {@code src} (position to limit) into {@code dst}, advancing both. */
  static void encode(ByteBuffer src, ByteBuffer dst) {
    ByteBuffer in = src.order() == ByteOrder.LITTLE_ENDIAN ? src : src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int n = in.remaining() / 4;
    int from = in.position();
    ByteBuffer out = dst.order(ByteOrder.LITTLE_ENDIAN);
    int to = out.position();
    for (int i = 0; i < n; i++) {
      out.putShort(to + 2 * i, encode(in.getFloat(from + 4 * i)));
    }
    src.position(from + 4 * n);
    dst.position(to + 2 * n);
  }

  /** Encodes {@code src[off .. off+n)} into {@code dst} at its position, advancing it. */
  static void encode(float[] src, int off, int n, ByteBuffer dst) {
    int to = dst.position();
    for (int i = 0; i < n; i++) {
      dst.putShort(to + 2 * i, encode(src[off + i]));
    }
    dst.position(to + 2 * n);
  }

  /** Decodes {@code n} bfloat16s from {@code src} at its position into {@code dst[at .. at+n)}. */
  static void decode(ByteBuffer src, float[] dst, int at, int n) {
    int from = src.position();
    for (int i = 0; i < n; i++) {
      dst[at + i] = decode(src.getShort(from + 2 * i));
    }
    src.position(from + 2 * n);
  }

  /** Decodes the bfloat16s of {@code src} (position to limit) into {@code dst} as little-endian floats. */
  static void decode(ByteBuffer src, ByteBuffer dst) {
    int n = src.remaining() / 2;
    int from = src.position();
    ByteBuffer out = dst.order(ByteOrder.LITTLE_ENDIAN);
    int to = out.position();
    for (int i = 0; i < n; i++) {
      out.putFloat(to + 4 * i, decode(src.getShort(from + 2 * i)));
    }
    src.position(from + 2 * n);
    dst.position(to + 4 * n);
  }
}
