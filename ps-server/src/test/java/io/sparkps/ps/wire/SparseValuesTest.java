package io.sparkps.ps.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The pick of the largest elements: exactly k when k are nonzero, ascending, none smaller than one left out. */
class SparseValuesTest {
  @Test
  void nth_isTheSortedArraysElement() {
    Random r = new Random(9);
    for (int trial = 0; trial < 200; trial++) {
      int n = 1 + r.nextInt(300);
      float[] a = new float[n];
      for (int i = 0; i < n; i++) {
        a[i] = r.nextInt(trial % 2 == 0 ? 5 : 1000); // many ties, or few
      }
      float[] sorted = a.clone();
      Arrays.sort(sorted);
      int rank = r.nextInt(n);
      assertEquals(sorted[rank], SparseValues.nth(a.clone(), n, rank), "trial " + trial);
    }
  }

  @Test
  void selectLargest_picksExactlyTheLargest_withTiesAndZeros() {
    Random r = new Random(4);
    for (int trial = 0; trial < 100; trial++) {
      int n = 5000 + r.nextInt(20000);
      float[] x = new float[n + 7];
      for (int i = 7; i < x.length; i++) {
        x[i] = r.nextInt(4) == 0 ? 0f : (r.nextBoolean() ? -1 : 1) * (trial % 2 == 0 ? r.nextInt(8) : r.nextFloat());
      }
      int nonzero = (int) Arrays.stream(Arrays.copyOfRange(box(x), 7, x.length)).filter(v -> v != 0).count();
      int k = SparseValues.budget(0.01 + 0.2 * r.nextDouble(), n);
      int[] idx = new int[n];
      int picked = SparseValues.selectLargest(x, 7, n, k, idx, trial);
      assertEquals(Math.min(k, nonzero), picked, "trial " + trial + ": k " + k);
      float smallestPicked = Float.MAX_VALUE;
      boolean[] in = new boolean[n];
      for (int j = 0; j < picked; j++) {
        assertTrue(j == 0 || idx[j] > idx[j - 1], "ascending");
        in[idx[j]] = true;
        smallestPicked = Math.min(smallestPicked, Math.abs(x[7 + idx[j]]));
      }
      for (int i = 0; i < n; i++) {
        if (!in[i]) {
          assertTrue(Math.abs(x[7 + i]) <= smallestPicked, "trial " + trial + ": left out " + x[7 + i]
              + " above a picked " + smallestPicked);
        }
      }
    }
  }

  private static double[] box(float[] x) {
    double[] d = new double[x.length];
    for (int i = 0; i < x.length; i++) {
      d[i] = x[i];
    }
    return d;
  }
}
