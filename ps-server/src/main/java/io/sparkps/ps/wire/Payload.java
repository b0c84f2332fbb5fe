package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.grpc.proto.FrameHeader;

/**
 * One received frame: its header and {@code count} floats of payload in {@code data} (which may
 * be longer, being pooled), and where the receiver found the first NaN or infinite value while
 * the payload was hot in cache: -1 for none, {@link #UNCHECKED} if it did not look.
 */
@Internal
public record Payload(FrameHeader header, float[] data, int count, int firstNonFinite) {
  /** The receiver did not check the payload. */
  public static final int UNCHECKED = -2;
}
