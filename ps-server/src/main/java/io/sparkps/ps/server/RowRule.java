package io.sparkps.ps.server;

import io.sparkps.ps.spec.Optimizer;
import java.util.Arrays;

/**
 * The lazy update rules of an embedding table ({@link Optimizer} says what each one does), on the
 * rows a push touches. SGD, AdaGrad and lazy Adam are the dense variables' rules ({@link
 * UpdateRule}'s formulas, ND4J's), applied to one row at a time: the row's state and gradient are
 * laid out beside the row in the thread's scratch arrays, so the one loop of each formula serves
 * both. Lazy Adam corrects its bias by the row's own update count, as TensorFlow Addons' LazyAdam
 * does by the global step for the rows it touches. Row-wise AdaGrad (one accumulator a row) and
 * FTRL are rules of rows only.
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
      default -> throw new IllegalStateException(kind + " is no optimizer of rows");
    };
  }

  /**
   * Applies gradient {@code g[gOff..gOff+dim)} to row {@code w[wOff..wOff+dim)} with its state
   * {@code s[sOff..)}; {@code updates} is how many updates the row had before this one.
   */
  void apply(float[] w, int wOff, float[] s, int sOff, float[] g, int gOff, int dim, long updates) {
    switch (kind) {
      case SGD -> UpdateRule.sgd(w, beside(g, gOff, wOff, dim), wOff, wOff + dim, learningRate);
      case ADAGRAD -> {
        // A row's sums lie at its weights' offset in pages of their own (a state as wide as the
        // row), so the loop runs on them in place; elsewhere, on a copy beside the row.
        float[] sums = sOff == wOff ? s : UpdateRule.SCRATCH.get().first(wOff + dim);
        if (updates == 0) {
          Arrays.fill(sums, wOff, wOff + dim, epsilon);  // ND4J's AdaGrad starts each sum at epsilon
        } else if (sums != s) {
          System.arraycopy(s, sOff, sums, wOff, dim);
        }
        UpdateRule.adaGrad(w, sums, beside(g, gOff, wOff, dim), wOff, wOff + dim, learningRate, epsilon);
        if (sums != s) {
          System.arraycopy(sums, wOff, s, sOff, dim);
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
    UpdateRule.Scratch scratch = UpdateRule.SCRATCH.get();
    float[] m = scratch.first(wOff + dim);
    float[] v = scratch.second(wOff + dim);
    System.arraycopy(s, sOff, m, wOff, dim);
    System.arraycopy(s, sOff + dim, v, wOff, dim);
    float alpha = UpdateRule.adamAlpha(learningRate, beta1, beta2, epsilon, updates);
    UpdateRule.adam(w, m, v, beside(g, gOff, wOff, dim), wOff, wOff + dim, alpha, beta1, beta2, epsilon);
    System.arraycopy(m, wOff, s, sOff, dim);
    System.arraycopy(v, wOff, s, sOff + dim, dim);
  }

  /** The gradient at the row's offset: as it is when it lies there, else a copy in the thread's scratch. */
  private static float[] beside(float[] g, int gOff, int wOff, int dim) {
    if (gOff == wOff) {
      return g;
    }
    float[] copy = UpdateRule.SCRATCH.get().gradient(wOff + dim);
    System.arraycopy(g, gOff, copy, wOff, dim);
    return copy;
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
