package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.VariableSpec;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlacementTest {
  private static List<VariableSpec> model() {
    return List.of(VariableSpec.of("0_W", 784, 256), VariableSpec.of("0_b", 1, 256),
        VariableSpec.of("1_W", 256, 10), VariableSpec.of("1_b", 1, 10),
        VariableSpec.builder().setName("emb").setShape(100, 8).optPinnedShard(2).build());
  }

  @Test
  void place_sameSpecsInAnyOrder_giveTheSamePlan() {
    List<VariableSpec> shuffled = new ArrayList<>(model());
    Collections.shuffle(shuffled, new java.util.Random(3));
    Placement a = new Placement(3, Placement.DEFAULT_SPLIT_BYTES);
    Placement b = new Placement(3, Placement.DEFAULT_SPLIT_BYTES);
    a.place(model());
    b.place(shuffled);
    for (VariableSpec v : model()) {
      assertEquals(a.slicesOf(v.name()), b.slicesOf(v.name()), v.name());
    }
  }

  @Test
  void place_largeVariable_splitIntoContiguousRowRangesOnEveryShard() {
    Placement p = new Placement(3, Placement.DEFAULT_SPLIT_BYTES);
    p.place(model());
    List<Placement.Slice> w = p.slicesOf("0_W");
    assertEquals(3, w.size());
    assertEquals(0, w.get(0).rowStart());
    assertEquals(w.get(0).rowEnd(), w.get(1).rowStart());
    assertEquals(784, w.get(2).rowEnd());
    assertEquals(784 * 256, w.stream().mapToLong(Placement.Slice::length).sum());
  }

  @Test
  void place_smallVariables_goWholeToTheLeastLoadedShard_andPinsWin() {
    Placement p = new Placement(3, Placement.DEFAULT_SPLIT_BYTES);
    p.place(model());
    assertEquals(List.of(2), p.slicesOf("emb").stream().map(Placement.Slice::shard).toList());
    assertEquals(1, p.slicesOf("1_W").size());
    assertEquals(0, p.slicesOf("1_W").get(0).shard(), "the largest small variable goes to an empty shard, lowest first");
    long[] load = p.loadBytes();
    long max = Math.max(load[0], Math.max(load[1], load[2]));
    long min = Math.min(load[0], Math.min(load[1], load[2]));
    assertTrue(max - min <= 2560 * 4, "balanced within the largest whole variable: " + java.util.Arrays.toString(load));
    assertArrayEquals(new long[] {0, 784}, new long[] {p.slicesOf("0_W").get(0).rowStart(), p.slicesOf("0_W").get(2).rowEnd()});
  }

  @Test
  void place_pinToMissingShard_failsNamingIt() {
    Placement p = new Placement(2, Placement.DEFAULT_SPLIT_BYTES);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.place(model()));
    assertTrue(e.getMessage().contains("'emb' is pinned to ps 2") && e.getMessage().contains("only 2"), e.getMessage());
  }
}
