package io.sparkps.ps.wire;

/**
 * Finds NaN and infinite floats fast: one branch-free pass that the JIT vectorizes (a max of
 * absolute values, which NaN and infinity both poison), and a second, scalar pass only to locate
 * the first bad value.
 */
@Internal
public final class FiniteCheck {
  private FiniteCheck() {}

  /** Index of the first NaN or infinite value in {@code a[from .. from+n)}, relative to {@code from}, or -1. */
  public static int firstNonFinite(float[] a, int from, int n) {
    float max = 0f;
    for (int i = from; i < from + n; i++) {
      max = Math.max(max, Math.abs(a[i]));
    }
    if (Float.isFinite(max)) {
      return -1;
    }
    for (int i = from; i < from + n; i++) {
      if (!Float.isFinite(a[i])) {
        return i - from;
      }
    }
    return -1;
  }
}
