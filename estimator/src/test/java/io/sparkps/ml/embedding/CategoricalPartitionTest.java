package io.sparkps.ml.embedding;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.param.EmbeddingColumn;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker's categorical rows beyond the in-memory limit go to a spill file in blocks and come back
 * a shuffle window at a time: every row exactly once an epoch with its keys (array columns of any
 * length, missing values), numeric values and label as read; a new order each epoch, the same for
 * the same seed; a resumed epoch continues with the batches it would have had; the file is gone
 * once closed.
 */
class CategoricalPartitionTest {
  private static final EmbeddingInputs INPUTS = new EmbeddingInputs(List.of(EmbeddingColumn.of("user", 4),
      EmbeddingColumn.of("items", 4).withPooling(EmbeddingColumn.Pooling.MEAN)), List.of("x"));
  @TempDir
  Path dir;

  /** Row i: user i % 97 (missing every 13th), items 0..i % 5 ids (none every 5th), x = i / 10, label i % 2. */
  private static List<Row> rows(int n) {
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      List<Object> items = new ArrayList<>();
      for (int k = 0; k < i % 5; k++) {
        items.add((long) (i * 7 + k) % 1000);
      }
      rows.add(RowFactory.create((double) (i % 2), i % 13 == 0 ? null : (long) (i % 97),
          scala.collection.JavaConverters.asScalaBuffer(items).toSeq(), i / 10.0));
    }
    return rows;
  }

  private static CategoricalPartition read(List<Row> rows, long inMemoryMax, int window, Path dir) {
    return CategoricalPartition.read(rows.iterator(), INPUTS, true, 1, 3, new Minibatches.Limits(inMemoryMax,
        window), dir);
  }

  /** Row r of {@code rows} as text: its keys per column, its value and its label. */
  private static String describe(CategoricalRows rows, int r) {
    StringBuilder s = new StringBuilder();
    for (int c = 0; c < 2; c++) {
      s.append(Arrays.toString(Arrays.copyOfRange(rows.keys(), rows.start(r, c), rows.end(r, c)))).append(' ');
    }
    return s.append(rows.value(r, 0)).append(' ').append(rows.labels()[r]).toString();
  }

  /** How often each row's description occurs in an epoch of {@code steps} batches. */
  private static Map<String, Integer> epoch(CategoricalPartition p, int epoch, int from, int steps, int batch,
      List<String> order) {
    Map<String, Integer> seen = new HashMap<>();
    Iterator<CategoricalPartition.Batch> it = p.epoch(epoch, from, steps, batch, 5);
    while (it.hasNext()) {
      CategoricalPartition.Batch b = it.next();
      assertEquals(batch, b.index().length);
      for (int i : b.index()) {
        String d = describe(b.rows(), i);
        order.add(d);
        seen.merge(d, 1, Integer::sum);
      }
    }
    return seen;
  }

  @Test
  void spilledRows_comeBackEachOnceAnEpoch_asTheyWereRead() throws Exception {
    int n = 3 * CategoricalPartition.BLOCK_ROWS + 1000;
    List<Row> input = rows(n);
    Map<String, Integer> expected = new HashMap<>();
    try (CategoricalPartition inMemory = read(input, Long.MAX_VALUE, 1, dir)) {
      assertNull(inMemory.spillFile(), "under the limit the rows stay in memory");
      CategoricalRows all = inMemory.inMemory();
      for (int r = 0; r < n; r++) {
        expected.merge(describe(all, r), 1, Integer::sum);
      }
    }
    // A window of 5,000 rows: two blocks of 4,096, so every window spans blocks and batches span windows.
    try (CategoricalPartition spilled = read(input, 0, 5000, dir)) {
      Path file = spilled.spillFile();
      assertTrue(file != null && Files.size(file) > 0, "spilled to " + file);
      assertEquals(n, spilled.rows());
      assertThrows(IllegalStateException.class, spilled::inMemory);
      // 100 rows a batch: 132 batches take 13,200 of the epoch's 13,288 rows, 133 wrap around by 12.
      List<String> first = new ArrayList<>();
      epoch(spilled, 0, 0, n / 100, 100, first);
      assertEquals(n / 100 * 100, first.size());
      List<String> whole = new ArrayList<>();
      Map<String, Integer> once = epoch(spilled, 0, 0, (n + 99) / 100, 100, whole);
      assertTrue(whole.subList(0, first.size()).equals(first), "the same seed and epoch, the same order");
      Map<String, Integer> overOneEpoch = new HashMap<>();
      for (String d : whole.subList(0, n)) {
        overOneEpoch.merge(d, 1, Integer::sum);
      }
      assertTrue(expected.equals(overOneEpoch), "every row once in an epoch, as read: " + expected.size() + " rows, "
          + overOneEpoch.size() + " seen");
      assertEquals(n + 12, once.values().stream().mapToInt(Integer::intValue).sum());
      assertTrue(whole.subList(0, 12).equals(whole.subList(n, n + 12)), "from the start again when the rows run out");
      List<String> second = new ArrayList<>();
      epoch(spilled, 1, 0, 10, 100, second);
      assertFalse(first.subList(0, 1000).equals(second), "another epoch, another order");
      List<String> resumed = new ArrayList<>();
      epoch(spilled, 0, 57, 90, 100, resumed);
      assertTrue(first.subList(5700, 9000).equals(resumed), "a resumed epoch continues with the batches it would have "
          + "had");
      spilled.close();
      assertFalse(Files.exists(file), "closing deletes the spill file");
      assertThrows(IllegalStateException.class, () -> spilled.epoch(0, 0, 1, 10, 5));
    }
  }

  @Test
  void rowsSpill_onceTheyOutgrowTheLimit_andKeepTheirOrderOfBlocks() throws Exception {
    int n = 4 * CategoricalPartition.BLOCK_ROWS;
    // About 40 bytes a row: 3 keys, 2 column starts, a value and a label.
    try (CategoricalPartition small = read(rows(1000), 300_000, 1 << 20, dir);
        CategoricalPartition large = read(rows(n), 300_000, 1 << 20, dir)) {
      assertNull(small.spillFile(), "1,000 rows fit in 300,000 bytes");
      assertTrue(large.spillFile() != null, "16,384 rows do not");
      // A window as large as the partition: an epoch's rows are those read, in some order.
      List<String> order = new ArrayList<>();
      epoch(large, 0, 0, n / 64, 64, order);
      CategoricalRows read = read(rows(n), Long.MAX_VALUE, 1, dir).inMemory();
      List<String> expected = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        expected.add(describe(read, r));
      }
      List<String> sorted = new ArrayList<>(order);
      sorted.sort(null);
      expected.sort(null);
      assertTrue(expected.equals(sorted), "the rows read, once each");
    }
  }

  @Test
  void aSpilledPartition_holdsAWindowOfRows_notThePartition() throws Exception {
    int n = 20 * CategoricalPartition.BLOCK_ROWS;
    long all;
    try (CategoricalPartition inMemory = read(rows(n), Long.MAX_VALUE, 1, dir)) {
      all = inMemory.heldBytes();
    }
    try (CategoricalPartition spilled = read(rows(n), 0, CategoricalPartition.BLOCK_ROWS, dir)) {
      assertTrue(spilled.heldBytes() < all / 10, "read: " + spilled.heldBytes() + " bytes held of " + all);
      long most = 0;
      Iterator<CategoricalPartition.Batch> epoch = spilled.epoch(0, 0, n / 256, 256, 1);
      while (epoch.hasNext()) {
        epoch.next();
        most = Math.max(most, spilled.heldBytes());
      }
      // A window of one block, 1/20 of the rows, in arrays that double as they grow.
      assertTrue(most < all / 5, "training: at most " + most + " bytes held of " + all);
    }
  }

  @Test
  void rowsWithLongArraysOfIds_spillInBlocksOfBoundedBytes() throws Exception {
    // 1,500 rows of 2,000 ids each: 24 MB of keys, 16 KB a row, so a block ends at 4 MiB (262 rows),
    // the rows held when the 16 MiB limit is passed as well as those read after.
    List<Row> input = new ArrayList<>();
    for (int i = 0; i < 1500; i++) {
      List<Object> items = new ArrayList<>();
      for (int k = 0; k < 2000; k++) {
        items.add((long) i * 2000 + k);
      }
      input.add(RowFactory.create((double) (i % 2), (long) i, scala.collection.JavaConverters.asScalaBuffer(items)
          .toSeq(), (double) i));
    }
    try (CategoricalPartition spilled = read(input, 16 << 20, 1, dir)) {
      assertTrue(spilled.spillFile() != null);
      long read = spilled.heldBytes();
      assertTrue(read < 3 * CategoricalPartition.BLOCK_BYTES, "read: " + read + " bytes held");
      List<String> order = new ArrayList<>();
      Map<String, Integer> seen = epoch(spilled, 0, 0, 1500 / 50, 50, order);
      assertEquals(1500, seen.size(), "every row once");
      assertTrue(seen.values().stream().allMatch(c -> c == 1), "every row once");
      // A window of one block (the setting asks for 1 row): at most a block's ids at a time.
      assertTrue(spilled.heldBytes() < 3 * CategoricalPartition.BLOCK_BYTES, "training: " + spilled.heldBytes()
          + " bytes held");
    }
  }

  @Test
  void aPartitionUnderOneBlock_spillsWhenTheLimitIsZero() throws Exception {
    try (CategoricalPartition p = read(rows(10), 0, 100, dir)) {
      assertTrue(p.spillFile() != null, "0 spills every partition");
      List<String> order = new ArrayList<>();
      Map<String, Integer> seen = epoch(p, 0, 0, 2, 5, order);
      assertEquals(10, seen.size(), "the 10 rows once each: " + order);
    }
  }

  @Test
  void aBadRowAfterTheSpill_failsNamingIt_andLeavesNoFile() throws Exception {
    List<Row> input = new ArrayList<>(rows(2 * CategoricalPartition.BLOCK_ROWS));
    input.add(RowFactory.create(null, 1L, scala.collection.JavaConverters.asScalaBuffer(List.of()).toSeq(), 0.0));
    Exception e = assertThrows(IllegalArgumentException.class, () -> read(input, 0, 100, dir));
    assertEquals("row 8192 of partition 3 has no label: drop or fill the rows whose label is null", e.getMessage());
    try (java.util.stream.Stream<Path> left = Files.list(dir)) {
      assertEquals(List.of(), left.toList(), "the spill file is deleted");
    }
  }

  @Test
  void anUnwritableSpillDirectory_isNamed_withTheFix() throws Exception {
    Path file = Files.createFile(dir.resolve("not-a-directory"));
    Exception e = assertThrows(java.io.UncheckedIOException.class, () -> read(rows(10), 0, 100, file.resolve("x")));
    assertTrue(e.getMessage().contains("cannot create a spill file in " + file.resolve("x"))
        && e.getMessage().contains("spark.local.dir"), e.getMessage());
  }
}
