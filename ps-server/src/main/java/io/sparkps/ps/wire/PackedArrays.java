package io.sparkps.ps.wire;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.sparkps.ps.annotation.Internal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Arrays of longs and floats as little-endian bytes in protobuf {@code bytes} fields, both ways. */
@Internal
public final class PackedArrays {
  private PackedArrays() {}

  /** {@code values} as 8 little-endian bytes each. */
  public static ByteString ofLongs(long[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.asLongBuffer().put(values);
    return UnsafeByteOperations.unsafeWrap(b.array()); // a new array nothing else holds: no second copy
  }

  /** {@code values} as 4 little-endian bytes each. */
  public static ByteString ofFloats(float[] values) {
    ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(values);
    return UnsafeByteOperations.unsafeWrap(b.array()); // a new array nothing else holds: no second copy
  }

  /** The longs of {@code bytes}; {@code field} names it in the error when its length is not a multiple of 8. */
  public static long[] longs(ByteString bytes, String field) {
    check(bytes, Long.BYTES, field);
    long[] out = new long[bytes.size() / Long.BYTES];
    bytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(out);
    return out;
  }

  /** The floats of {@code bytes}; {@code field} names it in the error when its length is not a multiple of 4. */
  public static float[] floats(ByteString bytes, String field) {
    check(bytes, Float.BYTES, field);
    float[] out = new float[bytes.size() / Float.BYTES];
    bytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
    return out;
  }

  private static void check(ByteString bytes, int width, String field) {
    if (bytes.size() % width != 0) {
      throw PsError.invalid(field + " holds " + bytes.size() + " bytes, not a multiple of " + width);
    }
  }
}
