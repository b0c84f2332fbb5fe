package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class InputPlacementTest {
  @Test
  void balancedPartitions_areGroupedByRows_largestFirst() {
    InputPlacement p = InputPlacement.plan(new long[] {100, 100, 100, 100}, 2).orElseThrow();
    assertArrayEquals(new long[] {200, 200}, p.workerRows());
    assertArrayEquals(new int[] {0, 2}, p.groups()[0]);
    assertArrayEquals(new int[] {1, 3}, p.groups()[1]);
    // 90 + 40 + 30 against 80 + 50 + 10 (rows 160 and 140, within 10% of 150); empty partitions go anywhere.
    InputPlacement q = InputPlacement.plan(new long[] {10, 90, 50, 40, 0, 80, 30}, 2).orElseThrow();
    assertEquals(300, q.workerRows()[0] + q.workerRows()[1]);
    assertTrue(Math.abs(q.workerRows()[0] - q.workerRows()[1]) <= 30, java.util.Arrays.toString(q.workerRows()));
    assertTrue(q.toString().contains("7 input partitions on 2 workers without a shuffle"), q.toString());
    InputPlacement same = InputPlacement.plan(new long[] {50, 52, 51}, 3).orElseThrow();
    assertTrue(same.identity(), "one partition each keeps its own index");
    assertTrue(!p.identity());
  }

  @Test
  void fewPartitionsOrSkew_needAShuffle_andSaySo() {
    assertEquals(Optional.empty(), InputPlacement.plan(new long[] {1000}, 2));
    assertEquals(Optional.empty(), InputPlacement.plan(new long[] {500, 0, 0}, 2));
    assertEquals(Optional.empty(), InputPlacement.plan(new long[] {5, 5, 5}, 2), "10 against 5 rows");
    assertEquals(Optional.empty(), InputPlacement.plan(new long[] {100, 10, 10, 10}, 2), "100 against 30 rows");
    assertEquals("the input has 1 non-empty partitions for 2 workers (rows per partition: [1000])",
        InputPlacement.whyShuffle(new long[] {1000}, 2));
    assertEquals("the input's 3 partitions cannot be split into 2 groups of rows within 10% of each other (rows per "
        + "partition: [5, 5, 5])", InputPlacement.whyShuffle(new long[] {5, 5, 5}, 2));
    long[] many = new long[20];
    assertTrue(InputPlacement.whyShuffle(many, 40).endsWith("0, 0, ... 4 more])"), InputPlacement.whyShuffle(many, 40));
  }
}
