package io.sparkps.ml.param;

/**
 * How an embedding model reads its numeric columns, the same in training, evaluation and scoring
 * (a saved model keeps it).
 */
public enum NumericTransform {
  /** As they are. */
  NONE {
    @Override
    public float apply(float x) {
      return x;
    }
  },
  /**
   * {@code sign(x) * ln(1 + |x|)}: count-like columns (a click log's counts, from 0 to many thousands)
   * as click-through models read them; 0 stays 0, and the few negative values keep their sign.
   */
  LOG1P {
    @Override
    public float apply(float x) {
      return Math.signum(x) * (float) Math.log1p(Math.abs(x));
    }
  };

  /** The value the network reads for the column's value {@code x}. */
  public abstract float apply(float x);
}
