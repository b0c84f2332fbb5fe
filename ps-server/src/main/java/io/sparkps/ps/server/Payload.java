package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.FrameHeader;

/**
 * One received frame: its header and {@code count} floats of payload in {@code data} (which may
 * be longer, being pooled).
 */
public record Payload(FrameHeader header, float[] data, int count) {}
