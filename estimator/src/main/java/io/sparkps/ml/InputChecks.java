package io.sparkps.ml;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;

import io.sparkps.ml.data.LabelKind;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * What can be known about the data before launch, checked on the driver with cheap Spark jobs:
 * the DataFrame is not empty, the features fit the network's input, labels are present and fit
 * its output. Row-level problems further in are caught by each worker with the row's partition
 * and offset.
 */
final class InputChecks {
  private InputChecks() {}

  static void check(Dataset<?> data, String featuresCol, String labelCol, long inputs, LabelKind kind, long outputs) {
    List<Row> first = data.toDF().select(featuresCol).limit(1).collectAsList();
    if (first.isEmpty()) {
      throw new IllegalArgumentException("the DataFrame is empty: there is nothing to train on");
    }
    Object features = first.get(0).get(0);
    long size = features instanceof Vector v ? v.size()
        : features instanceof scala.collection.Seq<?> s ? s.size() : -1;
    if (size != inputs) {
      throw new IllegalArgumentException("column '" + featuresCol + "' has " + size + " values in its first row but the "
          + "network's first layer takes " + inputs + ": fix nIn of the first layer or the features");
    }
    long nulls = data.toDF().filter(col(labelCol).isNull()).count();
    if (nulls > 0) {
      throw new IllegalArgumentException("column '" + labelCol + "' is null in " + nulls + " rows: drop or fill them first");
    }
    if (kind != LabelKind.CLASS_INDEX) {
      // The first row's width here; every row's width and values where the workers read them.
      Object label = data.toDF().select(labelCol).limit(1).collectAsList().get(0).get(0);
      long width = label instanceof Vector v ? v.size() : label instanceof scala.collection.Seq<?> s ? s.size() : 1;
      if (width != outputs) {
        throw new IllegalArgumentException("column '" + labelCol + "' has " + width + " values in its first row but the "
            + "output layer has " + outputs + " units: fix nOut of the output layer or the labels");
      }
      return;
    }
    long classes = outputs;
    Row range = data.toDF().agg(min(col(labelCol)), max(col(labelCol))).head();
    double lo = ((Number) range.get(0)).doubleValue();
    double hi = ((Number) range.get(1)).doubleValue();
    if (lo < 0 || hi >= classes) {
      throw new IllegalArgumentException("column '" + labelCol + "' ranges over [" + lo + ", " + hi + "] but the output "
          + "layer has " + classes + " classes: labels must be class indexes in [0, " + classes + ")"
          + " (use a StringIndexer, or give the output layer more units)");
    }
  }
}
