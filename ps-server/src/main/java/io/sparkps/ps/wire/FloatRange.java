package io.sparkps.ps.wire;

/** {@code length} floats of {@code array} from {@code offset}: one part of an outgoing frame. */
public record FloatRange(float[] array, int offset, int length) {}
