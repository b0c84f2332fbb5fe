package io.sparkps.ml.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Iterator;
import java.util.List;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.dataset.DataSet;

class MinibatchesTest {
  private static final StructType VECTORS = new StructType().add("features", SQLDataTypes.VectorType())
      .add("label", DataTypes.DoubleType);
  private static final StructType ARRAYS = new StructType()
      .add("features", DataTypes.createArrayType(DataTypes.FloatType)).add("label", DataTypes.IntegerType);

  private static Row row(StructType schema, Object features, Object label) {
    return new GenericRowWithSchema(new Object[] {features, label}, schema);
  }

  @Test
  void vectorsAndArrays_becomeShuffledOneHotMinibatches() {
    List<Row> rows = List.of(row(VECTORS, Vectors.dense(1, 2), 0.0), row(VECTORS, Vectors.sparse(2, new int[] {1},
        new double[] {5}), 2.0), row(VECTORS, Vectors.dense(3, 4), 1.0));
    Minibatches m = Minibatches.of(rows.iterator(), 0, "features", "label", 2, 3);
    assertEquals(3, m.size());
    Iterator<DataSet> epoch = m.epoch(0, 2, 2, 1);
    DataSet first = epoch.next();
    DataSet second = epoch.next();
    assertEquals(2, first.numExamples());
    assertEquals(4.0, first.getLabels().sumNumber().doubleValue() + second.getLabels().sumNumber().doubleValue(), 0);
    assertTrue(!epoch.hasNext());
    List<Row> arrays = List.of(row(ARRAYS, scala.collection.JavaConverters.asScalaBuffer(List.of(1f, 2f)).toSeq(), 1));
    assertEquals(1, Minibatches.of(arrays.iterator(), 0, "features", "label", 2, 2).size());
  }

  @Test
  void badRows_failNamingPartitionOffsetAndColumn() {
    assertMessage(List.of(row(VECTORS, Vectors.dense(1, 2), 0.0), row(VECTORS, Vectors.dense(1, 2, 3), 0.0)),
        "column 'features' has 3 values in row 1 of partition 4 but the network takes 2");
    assertMessage(List.of(row(VECTORS, Vectors.dense(Double.NaN, 2), 0.0)), "holds NaN in row 0 of partition 4");
    assertMessage(List.of(row(VECTORS, Vectors.dense(1, 2), 0.0), row(VECTORS, Vectors.dense(1, Double.NEGATIVE_INFINITY),
        0.0)), "holds -Infinity in row 1 of partition 4");
    assertMessage(List.of(row(VECTORS, Vectors.dense(1e300, 2), 0.0)), "holds 1.0E300 in row 0 of partition 4, beyond "
        + "the float32 range");
    assertMessage(List.of(row(VECTORS, null, 0.0)), "column 'features' is null in row 0 of partition 4");
    assertMessage(List.of(row(VECTORS, Vectors.dense(1, 2), 3.0)), "but the output layer has 3 classes");
    assertMessage(List.of(row(VECTORS, Vectors.dense(1, 2), 0.5)), "labels must be whole numbers");
  }

  /** {@code n} rows whose first feature is the row's number (so a batch tells which rows it holds), width 300. */
  private static List<Row> numbered(int n) {
    List<Row> rows = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      double[] f = new double[300];
      f[0] = i;
      f[299] = -i;
      rows.add(row(VECTORS, Vectors.dense(f), (double) (i % 3)));
    }
    return rows;
  }

  /** Every row's number in the order the epoch serves them, checking each row's last feature and label. */
  private static List<Integer> served(Minibatches m, int epoch, int from, int steps, int batch) {
    List<Integer> out = new java.util.ArrayList<>();
    m.epoch(epoch, from, steps, batch, 7).forEachRemaining(d -> {
      for (int b = 0; b < batch; b++) {
        int i = (int) d.getFeatures().getFloat(b, 0);
        assertEquals(-i, d.getFeatures().getFloat(b, 299), 0);
        assertEquals(1.0, d.getLabels().getFloat(b, i % 3), 0);
        out.add(i);
      }
    });
    return out;
  }

  @Test
  void spilledPartition_servesEveryRowOncePerEpoch_fromMappedWindows_andIsDeletedOnClose(@TempDir Path dir)
      throws Exception {
    int n = 5000; // 303 floats a row: 865 rows a 1 MiB block, 6 blocks, windows of 2 blocks
    List<Row> rows = numbered(n);
    Path file;
    try (Minibatches spilled = Minibatches.of(rows.iterator(), 0, "features", "label", 300, LabelKind.CLASS_INDEX, 3,
        new Minibatches.Limits(1 << 20, 1000), dir);
        Minibatches held = Minibatches.of(rows.iterator(), 0, "features", "label", 300, 3)) {
      file = spilled.spillFile();
      assertTrue(file != null, "a spill file");
      assertEquals((long) n * 303 * 4, Files.size(file));
      assertEquals(null, held.spillFile());
      for (Minibatches m : List.of(spilled, held)) {
        List<Integer> epoch0 = served(m, 0, 0, 50, 100);
        assertEquals(java.util.stream.IntStream.range(0, n).boxed().toList(), epoch0.stream().sorted().toList());
        assertEquals(epoch0, served(m, 0, 0, 50, 100), "the same seed and epoch give the same order");
        assertTrue(!epoch0.equals(served(m, 1, 0, 50, 100)), "another epoch is shuffled anew");
        assertEquals(epoch0.subList(1700, 5000), served(m, 0, 17, 50, 100), "a resumed epoch goes on where it was");
        List<Integer> wrapped = served(m, 0, 0, 60, 100);
        assertEquals(epoch0, wrapped.subList(0, n));
        assertEquals(epoch0.subList(0, 1000), wrapped.subList(n, 6000), "beyond the partition it wraps around");
      }
      // Within a window of 2 blocks (1730 rows), rows come from at most 2 blocks of the file.
      List<Integer> first = served(spilled, 0, 0, 17, 100);
      assertTrue(first.stream().map(i -> i / 865).distinct().count() <= 2, "first window's blocks: "
          + first.stream().map(i -> i / 865).distinct().toList());
      // In memory, the whole partition is one window: the first 1700 rows span every block.
      assertEquals(6, served(held, 0, 0, 17, 100).stream().map(i -> i / 865).distinct().count());
    }
    assertTrue(!Files.exists(file), "the spill file is deleted on close");
    try (var left = Files.list(dir)) {
      assertEquals(List.of(), left.toList());
    }
  }

  @Test
  void recycledBatches_holdWhatNewOnesHold_inTwoPairsOfArraysTakenInTurn_acrossEpochs() {
    List<Row> rows = numbered(700);
    try (Minibatches m = Minibatches.of(rows.iterator(), 0, "features", "label", 300, 3)) {
      for (int epoch = 0; epoch < 2; epoch++) {
        List<DataSet> fresh = new java.util.ArrayList<>();
        m.epoch(epoch, 1, 6, 64, 7).forEachRemaining(fresh::add);
        Iterator<DataSet> recycled = m.epoch(epoch, 1, 6, 64, 7, true);
        List<DataSet> taken = new java.util.ArrayList<>();
        for (int b = 0; b < 5; b++) {
          DataSet d = recycled.next();
          // each batch as a new one holds it, and the batch before it is untouched until this one's successor
          assertEquals(fresh.get(b).getFeatures(), d.getFeatures(), "epoch " + epoch + " batch " + b);
          assertEquals(fresh.get(b).getLabels(), d.getLabels(), "epoch " + epoch + " batch " + b);
          if (b > 0) {
            assertEquals(fresh.get(b - 1).getFeatures(), taken.get(b - 1).getFeatures(), "the batch before " + b);
            assertTrue(d.getFeatures() != taken.get(b - 1).getFeatures(), "batch " + b + " has the other pair");
          }
          if (b > 1) {
            assertTrue(d.getFeatures() == taken.get(b - 2).getFeatures() && d.getLabels() == taken.get(b - 2).getLabels(),
                "batch " + b + " reuses the arrays of batch " + (b - 2));
          }
          taken.add(d);
        }
      }
    }
  }

  @Test
  void badRowAfterSpilling_deletesTheSpillFile(@TempDir Path dir) throws Exception {
    List<Row> rows = new java.util.ArrayList<>(numbered(3000));
    rows.set(2500, row(VECTORS, Vectors.dense(new double[299]), 0.0));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Minibatches.of(rows.iterator(),
        0, "features", "label", 300, LabelKind.CLASS_INDEX, 3, new Minibatches.Limits(0, 1000), dir));
    assertTrue(e.getMessage().contains("299 values in row 2500 of partition 0"), e.getMessage());
    try (var left = Files.list(dir)) {
      assertEquals(List.of(), left.toList());
    }
  }

  private static void assertMessage(List<Row> rows, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Minibatches.of(rows.iterator(), 4, "features", "label", 2, 3));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
