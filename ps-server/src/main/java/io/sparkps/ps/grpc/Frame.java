package io.sparkps.ps.grpc;

import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * One message of a tensor-moving call: a {@link FrameHeader} and a float32 payload.
 *
 * <p>An outgoing frame refers to its payload (ranges of float arrays, or little-endian byte
 * buffers such as ND4J's {@code data().asNio()} views) and is serialized straight from them. A
 * received frame holds its payload in {@link #data()} (a pooled array), unless a per-call sink
 * already wrote it to its destination.
 */
@Internal
public final class Frame {
  private final FrameHeader header;
  private final List<FloatRange> floatParts;
  private final List<ByteBuffer> byteParts;
  private final int payloadBytes;
  private final float[] data;
  private final int count;
  private final int firstNonFinite;
  private String malformed;

  private Frame(FrameHeader header, List<FloatRange> floatParts, List<ByteBuffer> byteParts,
      int payloadBytes, float[] data, int count, int firstNonFinite) {
    this.firstNonFinite = firstNonFinite;
    this.header = header;
    this.floatParts = floatParts;
    this.byteParts = byteParts;
    this.payloadBytes = payloadBytes;
    this.data = data;
    this.count = count;
  }

  /** An outgoing frame whose payload is read from float array ranges. */
  public static Frame ofFloats(FrameHeader header, List<FloatRange> parts) {
    int floats = parts.stream().mapToInt(FloatRange::length).sum();
    return new Frame(header, List.copyOf(parts), List.of(), floats * 4, null, 0, -2);
  }

  /** An outgoing frame whose payload is read from little-endian byte buffers (their remaining bytes). */
  public static Frame ofBytes(FrameHeader header, List<ByteBuffer> parts) {
    int bytes = parts.stream().mapToInt(ByteBuffer::remaining).sum();
    return new Frame(header, List.of(), List.copyOf(parts), bytes, null, 0, -2);
  }

  /** A received frame with {@code count} floats in {@code data}, not checked for NaN. */
  public static Frame received(FrameHeader header, float[] data, int count) {
    return new Frame(header, List.of(), List.of(), count * 4, data, count, -2);
  }

  /** A received frame whose first NaN or infinite value is at {@code firstNonFinite} (-1: none). */
  static Frame checked(FrameHeader header, float[] data, int count, int firstNonFinite) {
    return new Frame(header, List.of(), List.of(), count * 4, data, count, firstNonFinite);
  }

  /**
   * A received message that is no frame (its header length, header or payload is broken): the
   * server's handler refuses it with {@code reason}, which names the field (a marshaller that
   * threw instead would make gRPC answer "Application error" and log it).
   */
  static Frame malformed(String reason) {
    Frame f = new Frame(FrameHeader.getDefaultInstance(), List.of(), List.of(), 0, null, 0, -2);
    f.malformed = reason;
    return f;
  }

  /** Why this received message is no frame, or null when it is one. */
  public String malformed() {
    return malformed;
  }

  /** Where the receiver found the first NaN or infinite value: -1 none, -2 not checked. */
  public int firstNonFinite() {
    return firstNonFinite;
  }

  /** The header. */
  public FrameHeader header() {
    return header;
  }

  /** Received payload (may be longer than {@link #count()}), or null. */
  public float[] data() {
    return data;
  }

  /** Floats in a received payload. */
  public int count() {
    return count;
  }

  int payloadBytes() {
    return payloadBytes;
  }

  List<FloatRange> floatParts() {
    return floatParts;
  }

  List<ByteBuffer> byteParts() {
    return byteParts;
  }
}
