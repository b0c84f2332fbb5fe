package io.sparkps.ps;

import org.nd4j.linalg.api.ndarray.INDArray;

/** A variable's value together with the version it was read at. */
public record VariableValue(INDArray value, long version) {}
