package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;

/** {@code length} floats of {@code array} from {@code offset}: one part of an outgoing frame. */
@Internal
public record FloatRange(float[] array, int offset, int length) {}
