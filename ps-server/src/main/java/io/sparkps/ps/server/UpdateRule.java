package io.sparkps.ps.server;

import io.sparkps.ps.OptimizerConfig;
import java.util.Arrays;

/**
 * The server-side optimizer of one variable slice, with its state.
 *
 * <p>The per-element formulas are those of ND4J's native updaters, computed in float like them:
 * the slice's parameters {@code w} receive {@code w -= update(g)}. Regularization follows DL4J:
 * L1/L2 are added to the gradient before the rule, weight decay to the update after it. Callers
 * hold the slice's lock.
 */
final class UpdateRule {
  private final OptimizerConfig spec;
  private final float[] m;
  private final float[] v;

  UpdateRule(OptimizerConfig spec, int size) {
    this.spec = spec;
    int states = switch (spec.kind()) {
      case ADAM -> 2;
      case MOMENTUM, NESTEROV, ADAGRAD, RMSPROP -> 1;
      default -> 0;
    };
    this.m = states >= 1 ? new float[size] : null;
    this.v = states >= 2 ? new float[size] : null;
    if (spec.kind() == OptimizerConfig.Kind.ADAGRAD || spec.kind() == OptimizerConfig.Kind.RMSPROP) {
      // ND4J starts the squared-gradient history at epsilon, not zero.
      Arrays.fill(m, (float) spec.epsilon());
    }
  }

  /** The optimizer's state arrays (for snapshots), possibly empty. */
  float[][] state() {
    if (m == null) {
      return new float[0][];
    }
    return v == null ? new float[][] {m} : new float[][] {m, v};
  }

  /**
   * Applies the gradient {@code g[gOff .. gOff+n)} to {@code w[wOff .. wOff+n)}, whose optimizer
   * state lies at the same offsets.
   */
  void apply(float[] w, int wOff, float[] g, int gOff, int n, long iteration) {
    float lr = (float) spec.learningRate().valueAt(iteration);
    float l1 = (float) spec.l1();
    float l2 = (float) spec.l2();
    boolean regularize = l1 != 0 || l2 != 0;
    float wd = (float) (spec.weightDecay() * (spec.weightDecayAppliesLr() ? lr : 1.0));
    float[] grad = g;
    int off = gOff;
    if (regularize || wd != 0) {
      grad = new float[n];
      off = 0;
      for (int i = 0; i < n; i++) {
        float wi = w[wOff + i];
        grad[i] = g[gOff + i] + l2 * wi + l1 * Math.signum(wi);
      }
    }
    float[] before = wd != 0 ? Arrays.copyOfRange(w, wOff, wOff + n) : null;
    switch (spec.kind()) {
      case SGD -> sgd(w, wOff, grad, off, n, lr);
      case NO_OP -> sgd(w, wOff, grad, off, n, 1f);
      case MOMENTUM -> momentum(w, wOff, grad, off, n, lr);
      case NESTEROV -> nesterov(w, wOff, grad, off, n, lr);
      case ADAM -> adam(w, wOff, grad, off, n, lr, iteration);
      case ADAGRAD -> adaGrad(w, wOff, grad, off, n, lr);
      case RMSPROP -> rmsProp(w, wOff, grad, off, n, lr);
    }
    if (before != null) {
      for (int i = 0; i < n; i++) {
        w[wOff + i] -= wd * before[i];
      }
    }
  }

  private static void sgd(float[] w, int wo, float[] g, int go, int n, float lr) {
    for (int i = 0; i < n; i++) {
      w[wo + i] -= lr * g[go + i];
    }
  }

  private void momentum(float[] w, int wo, float[] g, int go, int n, float lr) {
    float mu = (float) spec.momentum();
    for (int i = 0; i < n; i++) {
      float vi = mu * m[wo + i] - lr * g[go + i];
      m[wo + i] = vi;
      w[wo + i] += vi;
    }
  }

  private void nesterov(float[] w, int wo, float[] g, int go, int n, float lr) {
    float mu = (float) spec.momentum();
    for (int i = 0; i < n; i++) {
      float prev = mu * m[wo + i];
      float vi = prev - lr * g[go + i];
      m[wo + i] = vi;
      w[wo + i] -= prev - (mu + 1f) * vi;
    }
  }

  private void adam(float[] w, int wo, float[] g, int go, int n, float lr, long iteration) {
    float b1 = (float) spec.beta1();
    float b2 = (float) spec.beta2();
    float eps = (float) spec.epsilon();
    float b1t = (float) Math.pow(b1, iteration + 1);
    float b2t = (float) Math.pow(b2, iteration + 1);
    float alpha = (float) (lr * Math.sqrt(1f - b2t) / (1f - b1t));
    if (Float.isNaN(alpha) || Float.isInfinite(alpha) || alpha == 0f) {
      alpha = eps;
    }
    for (int i = 0; i < n; i++) {
      float gi = g[go + i];
      float mi = b1 * m[wo + i] + gi * (1f - b1);
      float vi = b2 * v[wo + i] + gi * gi * (1f - b2);
      m[wo + i] = mi;
      v[wo + i] = vi;
      w[wo + i] -= mi * alpha / ((float) Math.sqrt(vi) + eps);
    }
  }

  private void adaGrad(float[] w, int wo, float[] g, int go, int n, float lr) {
    float eps = (float) spec.epsilon();
    for (int i = 0; i < n; i++) {
      float gi = g[go + i];
      float si = m[wo + i] + gi * gi;
      m[wo + i] = si;
      w[wo + i] -= lr * gi / ((float) Math.sqrt(si) + eps);
    }
  }

  private void rmsProp(float[] w, int wo, float[] g, int go, int n, float lr) {
    float decay = (float) spec.decay();
    float eps = (float) spec.epsilon();
    for (int i = 0; i < n; i++) {
      float gi = g[go + i];
      float si = m[wo + i] * decay + gi * gi * (1f - decay);
      m[wo + i] = si;
      w[wo + i] -= lr * gi / ((float) Math.sqrt(si) + eps);
    }
  }
}
