package io.sparkps.ps.server;

/** {@code length} floats of {@code array} from {@code offset}: one part of an outgoing frame. */
public record FloatRange(float[] array, int offset, int length) {}
