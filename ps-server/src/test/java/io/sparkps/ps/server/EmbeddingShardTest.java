package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.EmbeddingTableFullException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class EmbeddingShardTest {
  private static EmbeddingShard shard(RowRule rule, int maxRows, long evictAfter, int minCount) {
    return new EmbeddingShard("user_id", 1, 3, rule, maxRows, evictAfter, minCount, 7, 0.05);
  }

  private static float[] pull(EmbeddingShard s, long step, long... ids) {
    float[] out = new float[ids.length * s.dim()];
    s.pull(ids, out, step);
    return out;
  }

  @Test
  void aNewId_getsARowThatIsAFunctionOfItsId_andKeepsIt() {
    EmbeddingShard a = shard(RowRule.sgd(0.1), 100, 0, 1);
    EmbeddingShard b = shard(RowRule.sgd(0.1), 100, 0, 1);
    float[] first = pull(a, 1, 42L, -5L, Long.MAX_VALUE);
    assertEquals(3, a.size());
    assertArrayEquals(first, pull(a, 2, 42L, -5L, Long.MAX_VALUE), "held rows read back unchanged");
    assertArrayEquals(first, pull(b, 9, 42L, -5L, Long.MAX_VALUE), "another shard, the same initial rows");
    for (float v : first) {
      assertTrue(Math.abs(v) <= 0.05f && v != 0f, "uniform in +-0.05: " + v);
    }
    float[] unseen = new float[3];
    a.read(new long[] {1234L}, unseen);
    assertArrayEquals(new float[3], unseen, "an id never trained reads the default row (zeros)");
    assertEquals(3, a.size(), "reading for inference creates no row");
  }

  @Test
  void pagesStayUnderHalfOfG1sSmallestRegion_andRowsOnManyPagesKeepTheirOwnValues() {
    // A page over 512 KiB is a humongous object in 1 MiB regions, given whole regions: a table took twice its size.
    for (int width : new int[] {1, 3, 16, 32, 64, 100, 1000, 5000, 100_000}) {
      long bytes = (1L << EmbeddingShard.pageBits(width)) * width * Float.BYTES;
      assertTrue(bytes <= 256 * 1024 || EmbeddingShard.pageBits(width) == 0, width + " floats a row: " + bytes);
    }
    assertEquals(12, EmbeddingShard.pageBits(3), "small rows: 4096 a page");
    assertEquals(10, EmbeddingShard.pageBits(32), "dim 32: 1024 rows, 128 KiB");
    assertEquals(9, EmbeddingShard.pageBits(64), "Adam's state of dim 32: 512 rows");
    // dim 3000: 16 rows a page, so 100 ids span 7 pages; each row moves by its own gradient.
    EmbeddingShard big = new EmbeddingShard("wide_rows", 0, 3000, RowRule.sgd(1), 1000, 0, 1, 7, 0.05);
    long[] ids = java.util.stream.LongStream.range(0, 100).toArray();
    float[] before = pull(big, 1, ids);
    float[] g = new float[ids.length * 3000];
    for (int i = 0; i < ids.length; i++) {
      g[i * 3000 + i] = i + 1;
    }
    big.push(ids, g, 2);
    float[] after = pull(big, 3, ids);
    for (int i = 0; i < ids.length; i++) {
      assertEquals(before[i * 3000 + i] - (i + 1), after[i * 3000 + i], 1e-5f, "row " + i);
      assertEquals(before[i * 3000 + i + 1], after[i * 3000 + i + 1], 0f, "row " + i + ", another element");
    }
  }

  @Test
  void aPush_appliesOneStepPerRow_summingTheGradientsOfARepeatedId() {
    EmbeddingShard sgd = shard(RowRule.sgd(0.5), 100, 0, 1);
    float[] before = pull(sgd, 1, 10L, 11L);
    sgd.push(new long[] {11L}, new float[] {0, 0, 4}, 2);
    float[] after = pull(sgd, 3, 10L, 11L);
    assertArrayEquals(new float[] {before[0], before[1], before[2], before[3], before[4], before[5] - 0.5f * 4}, after,
        1e-7f);
    // AdaGrad tells one step on the sum (w -= lr * G / |G|) from two steps in a row.
    EmbeddingShard ada = shard(RowRule.adaGrad(0.5, 1e-6), 100, 0, 1);
    float[] w = pull(ada, 1, 10L);
    ada.push(new long[] {10L, 11L, 10L}, new float[] {1, 2, -3, 0, 0, 4, 1, 1, 1}, 2);
    float[] g = {2, 3, -2};
    float[] a = pull(ada, 3, 10L);
    for (int k = 0; k < 3; k++) {
      assertEquals(w[k] - 0.5f * g[k] / ((float) Math.sqrt(g[k] * g[k]) + 1e-6f), a[k], 1e-6f);
    }
  }

  @Test
  void lazyAdam_movesOnlyTouchedRows_correctingByEachRowsOwnUpdateCount() {
    EmbeddingShard s = shard(RowRule.lazyAdam(0.01, 0.9, 0.999, 1e-8), 100, 0, 1);
    float[] w = pull(s, 1, 1L, 2L);
    float[] g = {0.5f, -1f, 2f};
    s.push(new long[] {1L}, g, 1);
    s.push(new long[] {1L}, g, 2);
    s.push(new long[] {2L}, g, 3); // row 2's first update: bias-corrected as a first step
    float[] after = pull(s, 4, 1L, 2L);
    for (int k = 0; k < 3; k++) {
      // Row 1, two steps of ND4J's Adam; row 2, one (lazy: the steps it missed do not count).
      float m = 0, v = 0, x = w[k];
      for (int t = 0; t < 2; t++) {
        m = 0.9f * m + 0.1f * g[k];
        v = 0.999f * v + 0.001f * g[k] * g[k];
        float alpha = (float) (0.01 * Math.sqrt(1 - Math.pow(0.999, t + 1)) / (1 - Math.pow(0.9, t + 1)));
        x -= m * alpha / ((float) Math.sqrt(v) + 1e-8f);
      }
      assertEquals(x, after[k], 1e-7f);
      float m1 = 0.1f * g[k];
      float v1 = 0.001f * g[k] * g[k];
      float alpha1 = (float) (0.01 * Math.sqrt(1 - 0.999) / (1 - 0.9));
      assertEquals(w[3 + k] - m1 * alpha1 / ((float) Math.sqrt(v1) + 1e-8f), after[3 + k], 1e-7f);
    }
  }

  @Test
  void rowwiseAdaGrad_keepsOneAccumulatorPerRow_andFtrlZeroesSmallWeights() {
    EmbeddingShard row = shard(RowRule.rowwiseAdaGrad(0.1, 1e-6), 100, 0, 1);
    float[] w = pull(row, 1, 5L);
    float[] g = {1f, 2f, 2f};
    row.push(new long[] {5L}, g, 1);
    row.push(new long[] {5L}, g, 2);
    float[] after = pull(row, 3, 5L);
    float s1 = 3f; // mean of 1, 4, 4
    float s2 = 6f;
    for (int k = 0; k < 3; k++) {
      float expected = w[k] - 0.1f * g[k] / ((float) Math.sqrt(s1) + 1e-6f) - 0.1f * g[k] / ((float) Math.sqrt(s2) + 1e-6f);
      assertEquals(expected, after[k], 1e-6f);
    }
    List<Integer> widths = new ArrayList<>();
    row.forEachRow(false, (id, r, ro, state, so, updates, step) -> widths.add(updates));
    assertEquals(List.of(0, 2), widths, "the default row untouched, row 5 updated twice");

    EmbeddingShard ftrl = shard(RowRule.ftrl(0.1, 1.0, 0.5, 0.0), 100, 0, 1);
    float[] w0 = pull(ftrl, 1, 8L);
    ftrl.push(new long[] {8L}, new float[] {0.2f, -3f, 0f}, 1);
    float[] f = pull(ftrl, 2, 8L);
    // z = g - sigma * w0, sigma = sqrt(g^2) / alpha; |z| <= l1 = 0.5 gives 0, else -(z - sign(z) l1) / ((beta + |g|) / alpha).
    assertEquals(0f, f[0], 0f, "a small gradient leaves the weight at exactly 0");
    float z = -3f - 30f * w0[1];
    assertEquals(-(z + 0.5f) / 40f, f[1], 1e-6f, "a large negative gradient gives a positive weight");
    assertEquals(0f, f[2], 0f);
  }

  @Test
  void anIdSeenFewerThanMinCountTimes_readsAndTrainsTheDefaultRow() {
    EmbeddingShard s = shard(RowRule.sgd(1.0), 100, 0, 3);
    assertArrayEquals(new float[3], pull(s, 1, 77L));
    s.push(new long[] {77L, 78L}, new float[] {1, 1, 1, 2, 2, 2}, 1);
    assertEquals(0, s.size(), "not admitted yet");
    assertArrayEquals(new float[] {-3, -3, -3}, pull(s, 2, 77L), "the default row learned from both ids");
    float[] third = pull(s, 3, 77L);
    assertEquals(1, s.size(), "admitted at its third sight");
    assertEquals(s.initialValue(77L, 0), third[0], 0f, "its own row, from its initial value");
  }

  @Test
  void aFullShard_evictsRowsUntouchedForTheEvictionAge_elseFailsNamingTheTable() {
    EmbeddingShard strict = shard(RowRule.sgd(0.1), 2, 0, 1);
    pull(strict, 1, 1L, 2L);
    EmbeddingTableFullException full = assertThrows(EmbeddingTableFullException.class, () -> pull(strict, 2, 3L));
    assertEquals("embedding table 'user_id' is full on ps 1: it holds its limit of 2 rows and a new id arrived (no "
        + "eviction is set); raise its maxRows, add parameter servers, set an eviction age, or hash its ids into a "
        + "fixed number of buckets", full.getMessage());
    assertEquals(2, strict.size());

    EmbeddingShard aging = shard(RowRule.sgd(0.1), 2, 10, 1);
    pull(aging, 1, 1L, 2L);
    aging.push(new long[] {1L}, new float[] {1, 1, 1}, 5);
    aging.push(new long[] {2L}, new float[] {1, 1, 1}, 12);
    aging.markCheckpointed();
    assertThrows(EmbeddingTableFullException.class, () -> pull(aging, 14, 3L), "nothing untouched since step 4");
    pull(aging, 15, 3L); // id 1, last touched at step 5, is 10 steps old
    assertEquals(2, aging.size());
    assertArrayEquals(new long[] {1L}, aging.evictedSinceCheckpoint());
    Map<Long, Float> changed = new HashMap<>();
    aging.forEachRow(true, (id, r, ro, state, so, updates, step) -> changed.put(id, r[ro]));
    assertEquals(Map.of(3L, aging.initialValue(3L, 0)), changed, "only the new row changed since the checkpoint");
    aging.push(new long[] {2L}, new float[] {1, 1, 1}, 26);
    pull(aging, 27, 1L); // id 3 is the old one now: id 1 comes back, from its initial value
    assertEquals(aging.initialValue(1L, 2), pull(aging, 28, 1L)[2], 0f);
  }

  @Test
  void idSlots_agreeWithAHashMap_throughPutsAndRemovals() {
    IdSlots slots = new IdSlots(4);
    Map<Long, Integer> reference = new HashMap<>();
    SplittableRandom random = new SplittableRandom(11);
    for (int op = 0; op < 200_000; op++) {
      // Ids from a small range and multiples of a power of two: long runs of colliding homes.
      long id = random.nextBoolean() ? random.nextLong(3_000) : random.nextLong(3_000) << 32;
      if (random.nextInt(3) == 0) {
        assertEquals(reference.getOrDefault(id, -1).intValue(), slots.remove(id));
        reference.remove(id);
      } else {
        int slot = random.nextInt(1 << 20);
        slots.put(id, slot);
        reference.put(id, slot);
      }
      if (op % 1000 == 0) {
        assertEquals(reference.size(), slots.size());
        for (Map.Entry<Long, Integer> e : reference.entrySet()) {
          assertEquals(e.getValue().intValue(), slots.get(e.getKey()), "id " + e.getKey());
        }
      }
    }
  }
}
