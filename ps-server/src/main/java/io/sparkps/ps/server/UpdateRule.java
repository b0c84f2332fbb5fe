package io.sparkps.ps.server;

import io.sparkps.ps.spec.Optimizer;
import io.sparkps.ps.spec.OptimizerConfig;
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
  /**
   * The iteration at which the state began (0, or when a replacement shard was refilled without
   * it): Adam's bias correction counts from there, so fresh moments get the corrections of a
   * first step, not those of step {@code iteration}, which would make the first steps after a
   * refill about 3x too large (they cost a point of accuracy late in a run, measured).
   */
  private long stateSince;

  UpdateRule(OptimizerConfig spec, int size) {
    this.spec = spec;
    int states = switch (spec.kind()) {
      case ADAM -> 2;
      case MOMENTUM, NESTEROV, ADAGRAD, RMSPROP -> 1;
      default -> 0;
    };
    this.m = states >= 1 ? new float[size] : null;
    this.v = states >= 2 ? new float[size] : null;
    if (spec.kind() == Optimizer.ADAGRAD || spec.kind() == Optimizer.RMSPROP) {
      // ND4J starts the squared-gradient history at epsilon, not zero.
      Arrays.fill(m, (float) spec.epsilon());
    }
  }

  /** The iteration the state began at. */
  long stateSince() {
    return stateSince;
  }

  /** Records that the (fresh) state begins at {@code iteration}. */
  void stateSince(long iteration) {
    this.stateSince = iteration;
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
   *
   * <p>Every loop below indexes all its arrays with one expression: the JIT (C2, Java 17 to 25)
   * turns such loops into SIMD code (Adam: 0.29 instead of 2.3 ns per element, measured here) and
   * leaves loops over differently offset arrays scalar. A gradient at another offset is first
   * copied to the parameters' offsets in a scratch array of the calling thread, {@link #CHUNK}
   * values at a time, each chunk updated while it is still in the core's cache: copied whole, a
   * gradient of many MiB went out to memory and was read back (Adam on 1.86M values: 0.88 instead
   * of 1.2-1.6 ns per element, measured here).
   */
  void apply(float[] w, int wOff, float[] g, int gOff, int n, long iteration) {
    apply(w, wOff, g, gOff, n, iteration, 1f);
  }

  /** Values a rule takes at a time when the gradient is moved or regularized first (32 KiB of floats). */
  static final int CHUNK = 8192;

  /** As {@link #apply(float[], int, float[], int, int, long)}, the learning rate multiplied by {@code rateScale}. */
  void apply(float[] w, int wOff, float[] g, int gOff, int n, long iteration, float rateScale) {
    float lr = (float) spec.learningRate().valueAt(iteration) * rateScale;
    float l1 = (float) spec.l1();
    float l2 = (float) spec.l2();
    boolean regularize = l1 != 0 || l2 != 0;
    float wd = (float) (spec.weightDecay() * (spec.weightDecayAppliesLr() ? lr : 1.0));
    float alpha = spec.kind() == Optimizer.ADAM
        ? adamAlpha(lr, (float) spec.beta1(), (float) spec.beta2(), (float) spec.epsilon(),
            Math.max(0, iteration - stateSince))
        : 0f;
    boolean moved = gOff != wOff || regularize;
    float[] grad = moved ? SCRATCH.get().gradient(wOff + n) : g;
    float[] before = wd != 0 ? SCRATCH.get().before(wOff + n) : null;
    int step = moved || before != null ? CHUNK : n;
    for (int from = wOff; from < wOff + n; from += step) {
      int to = Math.min(wOff + n, from + step);
      if (moved) {
        System.arraycopy(g, gOff + (from - wOff), grad, from, to - from);
      }
      if (regularize) {
        for (int i = from; i < to; i++) {
          float wi = w[i];
          grad[i] = grad[i] + l2 * wi + l1 * Math.signum(wi);
        }
      }
      if (before != null) {
        System.arraycopy(w, from, before, from, to - from);
      }
      switch (spec.kind()) {
        case SGD -> sgd(w, grad, from, to, lr);
        case NO_OP -> sgd(w, grad, from, to, 1f);
        case MOMENTUM -> momentum(w, grad, from, to, lr);
        case NESTEROV -> nesterov(w, grad, from, to, lr);
        case ADAM -> adam(w, m, v, grad, from, to, alpha, (float) spec.beta1(), (float) spec.beta2(),
            (float) spec.epsilon());
        case ADAGRAD -> adaGrad(w, grad, from, to, lr);
        case RMSPROP -> rmsProp(w, grad, from, to, lr);
      }
      if (before != null) {
        for (int i = from; i < to; i++) {
          w[i] -= wd * before[i];
        }
      }
    }
  }

  /** Plain gradient descent on {@code [from, to)}. */
  static void sgd(float[] w, float[] g, int from, int to, float lr) {
    for (int i = from; i < to; i++) {
      w[i] -= lr * g[i];
    }
  }

  private void momentum(float[] w, float[] g, int from, int to, float lr) {
    float mu = (float) spec.momentum();
    float[] m = this.m;
    for (int i = from; i < to; i++) {
      float vi = mu * m[i] - lr * g[i];
      m[i] = vi;
      w[i] += vi;
    }
  }

  private void nesterov(float[] w, float[] g, int from, int to, float lr) {
    float mu = (float) spec.momentum();
    float[] m = this.m;
    for (int i = from; i < to; i++) {
      float prev = mu * m[i];
      float vi = prev - lr * g[i];
      m[i] = vi;
      w[i] -= prev - (mu + 1f) * vi;
    }
  }

  /**
   * Adam's step size after {@code iteration} earlier updates of the state: {@code lr} with the
   * moments' bias corrections, or {@code eps} once {@code beta^t} underflows (as ND4J's Adam).
   */
  static float adamAlpha(float lr, float b1, float b2, float eps, long iteration) {
    float b1t = (float) Math.pow(b1, iteration + 1);
    float b2t = (float) Math.pow(b2, iteration + 1);
    float alpha = (float) (lr * Math.sqrt(1f - b2t) / (1f - b1t));
    return Float.isNaN(alpha) || Float.isInfinite(alpha) || alpha == 0f ? eps : alpha;
  }

  /** Adam on {@code [from, to)} of the weights, their moments and the gradient, at step size {@code alpha}. */
  static void adam(float[] w, float[] m, float[] v, float[] g, int from, int to, float alpha, float b1, float b2,
      float eps) {
    float c1 = 1f - b1;
    float c2 = 1f - b2;
    for (int i = from; i < to; i++) {
      float gi = g[i];
      float mi = b1 * m[i] + gi * c1;
      float vi = b2 * v[i] + gi * gi * c2;
      m[i] = mi;
      v[i] = vi;
      w[i] -= mi * alpha / ((float) Math.sqrt(vi) + eps);
    }
  }

  private void adaGrad(float[] w, float[] g, int from, int to, float lr) {
    adaGrad(w, m, g, from, to, lr, (float) spec.epsilon());
  }

  /** AdaGrad on {@code [from, to)} of the weights, their squared-gradient sums {@code s} and the gradient. */
  static void adaGrad(float[] w, float[] s, float[] g, int from, int to, float lr, float eps) {
    for (int i = from; i < to; i++) {
      float gi = g[i];
      float si = s[i] + gi * gi;
      s[i] = si;
      w[i] -= lr * gi / ((float) Math.sqrt(si) + eps);
    }
  }

  private void rmsProp(float[] w, float[] g, int from, int to, float lr) {
    float decay = (float) spec.decay();
    float eps = (float) spec.epsilon();
    float c = 1f - decay;
    float[] m = this.m;
    for (int i = from; i < to; i++) {
      float gi = g[i];
      float si = m[i] * decay + gi * gi * c;
      m[i] = si;
      w[i] -= lr * gi / ((float) Math.sqrt(si) + eps);
    }
  }

  /** Per-thread scratch arrays, grown to the largest slice (or table page) the thread has updated. */
  static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /** Arrays laid out as the weights they go with, so that a rule's loop indexes all of them alike. */
  static final class Scratch {
    private static final int GRADIENT = 0;
    private static final int BEFORE = 1;
    private static final int FIRST = 2;
    private static final int SECOND = 3;
    private final float[][] arrays = {new float[0], new float[0], new float[0], new float[0]};

    /** A gradient moved to its weights' offsets. */
    float[] gradient(int length) {
      return atLeast(GRADIENT, length);
    }

    /** The weights before an update (for weight decay). */
    float[] before(int length) {
      return atLeast(BEFORE, length);
    }

    /** A first state array (a row's AdaGrad sums, its Adam first moments). */
    float[] first(int length) {
      return atLeast(FIRST, length);
    }

    /** A second state array (a row's Adam second moments). */
    float[] second(int length) {
      return atLeast(SECOND, length);
    }

    private float[] atLeast(int which, int length) {
      if (arrays[which].length < length) {
        arrays[which] = new float[length];
      }
      return arrays[which];
    }
  }
}
