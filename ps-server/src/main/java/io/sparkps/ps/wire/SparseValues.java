package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Sparse transfers: which elements to send, and their layout on the wire.
 *
 * <p>A sparse segment of {@code count} elements carries {@code k} pairs: first {@code k} element
 * indices (little-endian int32, strictly ascending, each below {@code count}), then their
 * {@code k} float32 values. Both ends pick the {@code k} elements of largest magnitude in one
 * array: a worker's gradient plus what it has not yet sent, or a shard's values minus what a
 * worker holds. The threshold comes from a sample, then is made exact among the candidates, so a
 * pick costs two passes over the array and a sort of about {@code 1.5 k} candidates.
 */
@Internal
public final class SparseValues {
  /** Slices of fewer elements travel dense (biases and the like: a few bytes, and they matter). */
  public static final int MIN_ELEMENTS = 4096;
  private static final int SAMPLE = 4096;
  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private SparseValues() {}

  /** The number of elements a density allows of {@code n}: at least 1. */
  public static int budget(double density, int n) {
    return (int) Math.max(1, Math.min(n, Math.ceil(density * n)));
  }

  /**
   * Writes to {@code idx} (room for {@code n}) the indices, ascending and relative to {@code off},
   * of the {@code k} elements of {@code x[off .. off+n)} with the largest magnitudes (ties broken
   * by position), or of all nonzero ones when fewer; returns how many.
   */
  public static int selectLargest(float[] x, int off, int n, int k, int[] idx, long seed) {
    if (k >= n) {
      int c = 0;
      for (int i = 0; i < n; i++) {
        if (x[off + i] != 0f) {
          idx[c++] = i;
        }
      }
      return c;
    }
    int c = candidates(x, off, n, sampledThreshold(x, off, n, k, seed), idx);
    if (c < k) {
      c = candidates(x, off, n, 0f, idx); // the sample aimed too high (rare): all nonzero elements are candidates
    }
    if (c <= k) {
      return c;
    }
    // Exact k-th largest magnitude among the candidates, then keep the ones above it and enough ties.
    float[] mags = SCRATCH.get().floats(c);
    for (int j = 0; j < c; j++) {
      mags[j] = Math.abs(x[off + idx[j]]);
    }
    float kth = nth(mags, c, c - k);
    int above = 0;
    for (int j = 0; j < c; j++) {
      if (Math.abs(x[off + idx[j]]) > kth) {
        above++;
      }
    }
    int ties = k - above;
    int kept = 0;
    for (int j = 0; j < c; j++) {
      float a = Math.abs(x[off + idx[j]]);
      if (a > kth || (a == kth && ties-- > 0)) {
        idx[kept++] = idx[j];
      }
    }
    return kept;
  }

  /** Writes to {@code idx} the indices of the nonzero elements of magnitude {@code t} or more; returns how many. */
  private static int candidates(float[] x, int off, int n, float t, int[] idx) {
    int c = 0;
    for (int i = 0; i < n; i++) {
      float a = Math.abs(x[off + i]);
      if (a >= t && a > 0f) {
        idx[c++] = i;
      }
    }
    return c;
  }

  /**
   * The value that would be at {@code rank} if {@code a[0 .. n)} were sorted ascending; reorders
   * {@code a} (quickselect, linear on average).
   */
  static float nth(float[] a, int n, int rank) {
    int lo = 0;
    int hi = n - 1;
    while (lo < hi) {
      float pivot = a[(lo + hi) >>> 1];
      int i = lo;
      int j = hi;
      while (i <= j) {
        while (a[i] < pivot) {
          i++;
        }
        while (a[j] > pivot) {
          j--;
        }
        if (i <= j) {
          float t = a[i];
          a[i] = a[j];
          a[j] = t;
          i++;
          j--;
        }
      }
      if (rank <= j) {
        hi = j;
      } else if (rank >= i) {
        lo = i;
      } else {
        return a[rank];
      }
    }
    return a[rank];
  }

  /** A magnitude that about {@code 1.5 k} of the {@code n} elements reach, from a seeded sample. */
  private static float sampledThreshold(float[] x, int off, int n, int k, long seed) {
    int m = Math.min(n, SAMPLE);
    float[] sample = SCRATCH.get().sample(m);
    SplittableRandom random = new SplittableRandom(seed);
    for (int j = 0; j < m; j++) {
      sample[j] = Math.abs(x[off + (m == n ? j : random.nextInt(n))]);
    }
    Arrays.sort(sample, 0, m);
    double fraction = Math.min(1.0, 1.5 * k / n);
    int rank = (int) Math.min(m - 1, Math.floor(m * (1 - fraction)));
    return sample[Math.max(0, rank)];
  }

  /** The pairs {@code (idx[j], x[off + idx[j]])} for {@code j < k}, laid out for the wire. */
  public static ByteBuffer pairs(int[] idx, int k, float[] x, int off) {
    ByteBuffer b = ByteBuffer.allocate(8 * k).order(ByteOrder.LITTLE_ENDIAN);
    for (int j = 0; j < k; j++) {
      b.putInt(idx[j]);
    }
    for (int j = 0; j < k; j++) {
      b.putFloat(x[off + idx[j]]);
    }
    return b.flip();
  }

  /**
   * Reads {@code k} pairs from {@code pairs} (consumed) and sets {@code dst[dstOff + index]} to each
   * value; other elements are left as they are. Refuses indices out of order or not below
   * {@code count}, naming {@code what}.
   */
  public static void scatter(ByteBuffer pairs, int k, int count, float[] dst, int dstOff, String what) {
    ByteBuffer in = pairs.order(ByteOrder.LITTLE_ENDIAN);
    int base = in.position();
    int previous = -1;
    for (int j = 0; j < k; j++) {
      int i = in.getInt(base + 4 * j);
      if (i <= previous || i >= count) {
        throw PsError.invalid(what + ": sparse index " + i + " at pair " + j + " is not ascending within 0.." + (count - 1)
            + " (field nonzeros)");
      }
      previous = i;
      dst[dstOff + i] = in.getFloat(base + 4 * k + 4 * j);
    }
    in.position(base + 8 * k);
  }

  /** As {@link #scatter(ByteBuffer, int, int, float[], int, String)}, into little-endian floats. */
  public static void scatter(ByteBuffer pairs, int k, ByteBuffer dst, String what) {
    ByteBuffer in = pairs.order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int count = out.remaining() / 4;
    int base = in.position();
    int at = out.position();
    int previous = -1;
    for (int j = 0; j < k; j++) {
      int i = in.getInt(base + 4 * j);
      if (i <= previous || i >= count) {
        throw new IllegalStateException(what + ": sparse index " + i + " at pair " + j + " is not ascending within 0.."
            + (count - 1));
      }
      previous = i;
      out.putFloat(at + 4 * i, in.getFloat(base + 4 * k + 4 * j));
    }
    in.position(base + 8 * k);
  }

  /** The calling thread's index array with room for {@code n} (grown as needed). */
  public static int[] indices(int n) {
    return SCRATCH.get().ints(n);
  }

  private static final class Scratch {
    private int[] ints = new int[0];
    private float[] floats = new float[0];
    private float[] sample = new float[0];

    int[] ints(int n) {
      if (ints.length < n) {
        ints = new int[n];
      }
      return ints;
    }

    float[] floats(int n) {
      if (floats.length < n) {
        floats = new float[n];
      }
      return floats;
    }

    float[] sample(int n) {
      if (sample.length < n) {
        sample = new float[n];
      }
      return sample;
    }
  }
}
