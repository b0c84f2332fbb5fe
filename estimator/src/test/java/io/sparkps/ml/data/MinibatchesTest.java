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
import org.junit.jupiter.api.Test;
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

  private static void assertMessage(List<Row> rows, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Minibatches.of(rows.iterator(), 4, "features", "label", 2, 3));
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }
}
