package io.sparkps.ps.server;

import io.sparkps.ps.spec.EmbeddingSpec.Optimizer;

/**
 * The lazy update rules of an embedding table ({@link Optimizer} says what each one does). Adam
 * and AdaGrad follow ND4J's formulas ({@link UpdateRule}) per row; lazy Adam corrects its bias by
 * the row's own update count, as TensorFlow Addons' LazyAdam does by the global step for rows it
 * touches.
 */
record RowRule(Optimizer kind, float learningRate, float beta1, float beta2, float epsilon, float l1, float l2,
    float ftrlBeta) {
  static RowRule sgd(double lr) {
    return new RowRule(Optimizer.SGD, (float) lr, 0, 0, 0, 0, 0, 0);
  }

  static RowRule adaGrad(double lr, double epsilon) {
    return new RowRule(Optimizer.ADAGRAD, (float) lr, 0, 0, (float) epsilon, 0, 0, 0);
  }

  static RowRule rowwiseAdaGrad(double lr, double epsilon) {
    return new RowRule(Optimizer.ROWWISE_ADAGRAD, (float) lr, 0, 0, (float) epsilon, 0, 0, 0);
  }

  static RowRule lazyAdam(double lr, double beta1, double beta2, double epsilon) {
    return new RowRule(Optimizer.LAZY_ADAM, (float) lr, (float) beta1, (float) beta2, (float) epsilon, 0, 0, 0);
  }

  static RowRule ftrl(double alpha, double beta, double l1, double l2) {
    return new RowRule(Optimizer.FTRL, (float) alpha, 0, 0, 0, (float) l1, (float) l2, (float) beta);
  }

  RowRule {
    if (!(learningRate > 0) || epsilon < 0 || l1 < 0 || l2 < 0 || ftrlBeta < 0) {
      throw new IllegalArgumentException("an embedding optimizer needs learningRate > 0 and epsilon, l1, l2, beta "
          + ">= 0, got " + learningRate + ", " + epsilon + ", " + l1 + ", " + l2 + ", " + ftrlBeta);
    }
  }

  /** Floats of state a row of {@code dim} elements needs. */
  int stateWidth(int dim) {
    return switch (kind) {
      case SGD -> 0;
      case ADAGRAD -> dim;
      case ROWWISE_ADAGRAD -> 1;
      case LAZY_ADAM, FTRL -> 2 * dim;
    };
  }

  /**
   * Applies gradient {@code g[gOff..gOff+dim)} to row {@code w[wOff..wOff+dim)} with its state
   * {@code s[sOff..)}; {@code updates} is how many updates the row had before this one.
   */
  void apply(float[] w, int wOff, float[] s, int sOff, float[] g, int gOff, int dim, long updates) {
    switch (kind) {
      case SGD -> {
        for (int i = 0; i < dim; i++) {
          w[wOff + i] -= learningRate * g[gOff + i];
        }
      }
      case ADAGRAD -> {
        for (int i = 0; i < dim; i++) {
          float gi = g[gOff + i];
          float si = (updates == 0 ? epsilon : s[sOff + i]) + gi * gi;
          s[sOff + i] = si;
          w[wOff + i] -= learningRate * gi / ((float) Math.sqrt(si) + epsilon);
        }
      }
      case ROWWISE_ADAGRAD -> {
        float squares = 0;
        for (int i = 0; i < dim; i++) {
          squares += g[gOff + i] * g[gOff + i];
        }
        float si = s[sOff] + squares / dim;
        s[sOff] = si;
        float rate = learningRate / ((float) Math.sqrt(si) + epsilon);
        for (int i = 0; i < dim; i++) {
          w[wOff + i] -= rate * g[gOff + i];
        }
      }
      case LAZY_ADAM -> lazyAdam(w, wOff, s, sOff, g, gOff, dim, updates);
      case FTRL -> ftrl(w, wOff, s, sOff, g, gOff, dim);
    }
  }

  private void lazyAdam(float[] w, int wOff, float[] s, int sOff, float[] g, int gOff, int dim, long updates) {
    float b1t = (float) Math.pow(beta1, updates + 1);
    float b2t = (float) Math.pow(beta2, updates + 1);
    float alpha = (float) (learningRate * Math.sqrt(1f - b2t) / (1f - b1t));
    if (Float.isNaN(alpha) || Float.isInfinite(alpha) || alpha == 0f) {
      alpha = epsilon; // as ND4J's Adam, once beta^t underflows
    }
    for (int i = 0; i < dim; i++) {
      float gi = g[gOff + i];
      float mi = beta1 * s[sOff + i] + gi * (1f - beta1);
      float vi = beta2 * s[sOff + dim + i] + gi * gi * (1f - beta2);
      s[sOff + i] = mi;
      s[sOff + dim + i] = vi;
      w[wOff + i] -= mi * alpha / ((float) Math.sqrt(vi) + epsilon);
    }
  }

  /** State: z then n. The weight is a function of them, recomputed after each update. */
  private void ftrl(float[] w, int wOff, float[] s, int sOff, float[] g, int gOff, int dim) {
    for (int i = 0; i < dim; i++) {
      float gi = g[gOff + i];
      float n = s[sOff + dim + i];
      float nNew = n + gi * gi;
      float sigma = ((float) Math.sqrt(nNew) - (float) Math.sqrt(n)) / learningRate;
      float z = s[sOff + i] + gi - sigma * w[wOff + i];
      s[sOff + i] = z;
      s[sOff + dim + i] = nNew;
      w[wOff + i] = Math.abs(z) <= l1 ? 0f
          : -(z - Math.signum(z) * l1) / ((ftrlBeta + (float) Math.sqrt(nNew)) / learningRate + l2);
    }
  }
}
