package io.sparkps.ps.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;

class PackedArraysTest {
  @Test
  void longsAndFloats_roundTrip_asLittleEndianBytes() {
    long[] ids = {0, -1, Long.MIN_VALUE, Long.MAX_VALUE, 0x0102030405060708L};
    ByteString packed = PackedArrays.ofLongs(ids);
    assertEquals(40, packed.size());
    assertEquals(0x08, packed.byteAt(32), "little-endian: the lowest byte first");
    assertArrayEquals(ids, PackedArrays.longs(packed, "ids"));
    float[] values = {0f, -0f, 1.5f, Float.MIN_VALUE, Float.NaN, Float.POSITIVE_INFINITY};
    ByteString floats = PackedArrays.ofFloats(values);
    assertEquals(24, floats.size());
    assertArrayEquals(values, PackedArrays.floats(floats, "rows"));
  }

  @Test
  void aLengthThatIsNotAWholeNumberOfValues_isRefused_namingTheField() {
    PsError e = assertThrows(PsError.class, () -> PackedArrays.longs(ByteString.copyFrom(new byte[12]), "ids"));
    assertEquals("ids holds 12 bytes, not a multiple of 8", e.getMessage());
    PsError f = assertThrows(PsError.class, () -> PackedArrays.floats(ByteString.copyFrom(new byte[6]), "gradients"));
    assertEquals("gradients holds 6 bytes, not a multiple of 4", f.getMessage());
  }
}
