package io.sparkps.ps.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The bulk codecs give each value the scalar codec's rounding, wherever the buffers stand. */
class Bf16CodecTest {
  /** Some thousands of values, special ones among them. */
  private static final int N = 2 * 4096 + 123;

  private static float[] values() {
    Random r = new Random(3);
    float[] v = new float[N];
    for (int i = 0; i < N; i++) {
      v[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(11) - 5));
    }
    v[0] = Float.NaN;
    v[4095] = Float.POSITIVE_INFINITY;
    v[4096] = Float.NEGATIVE_INFINITY;
    v[4097] = Float.MAX_VALUE;
    v[N - 1] = Float.intBitsToFloat(0x7fc12345); // a NaN with a payload
    v[N - 2] = -0f;
    return v;
  }

  private static void assertEncodedAt(float[] v, ByteBuffer encoded, int at) {
    for (int i = 0; i < v.length; i++) {
      assertEquals(Bf16.encode(v[i]), encoded.getShort(at + 2 * i), "value " + i + " (" + v[i] + ")");
    }
  }

  @Test
  void buffersAtAnOffset_encodeAndDecodeEachValueAsTheScalarCodecDoes() {
    float[] v = values();
    ByteBuffer src = ByteBuffer.allocateDirect(12 + 4 * N).order(ByteOrder.LITTLE_ENDIAN);
    src.position(12);
    src.asFloatBuffer().put(v);
    ByteBuffer encoded = ByteBuffer.allocateDirect(6 + 2 * N).order(ByteOrder.LITTLE_ENDIAN);
    encoded.position(6);
    Bf16.encode(src, encoded);
    assertEquals(12 + 4 * N, src.position(), "the source advanced by its floats");
    assertEquals(6 + 2 * N, encoded.position(), "the destination advanced by the bfloat16s");
    assertEncodedAt(v, encoded, 6);

    ByteBuffer decoded = ByteBuffer.allocate(8 + 4 * N).order(ByteOrder.LITTLE_ENDIAN);
    decoded.position(8);
    Bf16.decode(encoded.position(6), decoded);
    assertEquals(8 + 4 * N, decoded.position());
    float[] into = new float[N + 5];
    Bf16.decode(encoded.position(6), into, 5, N);
    assertEquals(6 + 2 * N, encoded.position());
    for (int i = 0; i < N; i++) {
      int expected = Float.floatToRawIntBits(Bf16.decode(Bf16.encode(v[i])));
      assertEquals(expected, decoded.getInt(8 + 4 * i), "decoded into a buffer, value " + i);
      assertEquals(expected, Float.floatToRawIntBits(into[5 + i]), "decoded into an array, value " + i);
    }
  }

  @Test
  void anArrayRange_encodesAsTheScalarCodecDoes() {
    float[] v = values();
    float[] padded = new float[N + 7];
    System.arraycopy(v, 0, padded, 7, N);
    ByteBuffer encoded = ByteBuffer.allocateDirect(10 + 2 * N).order(ByteOrder.LITTLE_ENDIAN);
    encoded.position(10);
    Bf16.encode(padded, 7, N, encoded);
    assertEquals(10 + 2 * N, encoded.position());
    assertEncodedAt(v, encoded, 10);
  }
}
