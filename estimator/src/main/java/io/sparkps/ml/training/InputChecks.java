package io.sparkps.ml.training;

import static org.apache.spark.sql.functions.col;

import io.sparkps.ml.data.LabelKind;
import java.io.Serializable;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaFutureAction;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * What can be known about the data before launch, checked on the driver with two cheap Spark jobs
 * run at once (the first row's features; per partition over the label column alone: rows, nulls,
 * range or first width): the DataFrame is not empty, the features fit the network's input, labels are
 * present and fit its output. Row-level problems further in are caught by each worker with the
 * row's partition and offset.
 */
public final class InputChecks {
  private InputChecks() {}

  /** Rows in each partition of the data, by partition index (the launch decides from them whether to shuffle). */
  public record Partitions(long[] rows) {
    long total() {
      long n = 0;
      for (long r : rows) {
        n += r;
      }
      return n;
    }
  }

  /**
   * One partition's label column: rows, nulls, smallest and largest number, width of the first
   * value, and where the first null or out-of-range label is (null when there is none).
   */
  private record LabelStats(int partition, long rows, long nulls, double lo, double hi, long firstWidth, String firstBad)
      implements Serializable {}

  static Partitions check(Dataset<?> data, String featuresCol, String labelCol, long inputs, LabelKind kind,
      long outputs) {
    // The two jobs run at once; the first row is judged first.
    JavaFutureAction<List<Row>> firstRow = data.toDF().select(featuresCol).javaRDD().takeAsync(1);
    List<LabelStats> stats;
    List<Row> first;
    try {
      stats = data.toDF().select(col(labelCol), org.apache.spark.sql.functions.input_file_name()).javaRDD()
          .mapPartitionsWithIndex(new Scan(kind == LabelKind.CLASS_INDEX ? outputs : -1), false).collect();
      first = firstRow.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while reading the first row of column '" + featuresCol + "'", e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw io.sparkps.ml.data.Prefetched.failure(e, "the job reading the first row of column '" + featuresCol + "'");
    } finally {
      if (!firstRow.isDone()) {
        firstRow.cancel(true);
      }
    }
    if (first.isEmpty()) {
      throw new IllegalArgumentException("the DataFrame is empty: there is nothing to train on");
    }
    long size = width(first.get(0).get(0));
    if (size != inputs) {
      throw new IllegalArgumentException("column '" + featuresCol + "' has " + size + " values in its first row but the "
          + "network's first layer takes " + inputs + ": fix nIn of the first layer or the features");
    }
    String firstBad = stats.stream().map(LabelStats::firstBad).filter(java.util.Objects::nonNull).findFirst().orElse("");
    long[] rows = new long[stats.size()];
    long nulls = 0;
    double lo = Double.POSITIVE_INFINITY;
    double hi = Double.NEGATIVE_INFINITY;
    long firstWidth = -1;
    for (LabelStats s : stats) {
      rows[s.partition()] = s.rows();
      nulls += s.nulls();
      lo = Math.min(lo, s.lo());
      hi = Math.max(hi, s.hi());
      firstWidth = firstWidth < 0 ? s.firstWidth() : firstWidth;
    }
    if (nulls > 0) {
      throw new IllegalArgumentException("column '" + labelCol + "' is null in " + nulls + " rows, the first " + firstBad
          + ": drop or fill them first");
    }
    if (kind != LabelKind.CLASS_INDEX) {
      // The first row's width here; every row's width and values where the workers read them.
      if (firstWidth != outputs) {
        throw new IllegalArgumentException("column '" + labelCol + "' has " + firstWidth + " values in its first row "
            + "but the output layer has " + outputs + " units: fix nOut of the output layer or the labels");
      }
    } else if (lo < 0 || hi >= outputs) {
      throw new IllegalArgumentException("column '" + labelCol + "' ranges over [" + lo + ", " + hi + "] but the output "
          + "layer has " + outputs + " classes (the first outside, " + firstBad + "): labels must be class indexes in [0, "
          + outputs + ")"
          + " (use a StringIndexer, or give the output layer more units)");
    }
    return new Partitions(rows);
  }

  private static long width(Object value) {
    return value instanceof Vector v ? v.size() : value instanceof scala.collection.Seq<?> s ? s.size()
        : value instanceof Number ? 1 : -1;
  }

  /** Scans one partition's label column (with each row's input file, to name the first bad one). */
  private static final class Scan implements Function2<Integer, Iterator<Row>, Iterator<LabelStats>> {
    private static final long serialVersionUID = 1L;
    private final long classes;

    /** {@code classes}: labels must be class indexes below it; -1 when they are not class indexes. */
    Scan(long classes) {
      this.classes = classes;
    }

    @Override
    public Iterator<LabelStats> call(Integer partition, Iterator<Row> labels) {
      long rows = 0;
      long nulls = 0;
      double lo = Double.POSITIVE_INFINITY;
      double hi = Double.NEGATIVE_INFINITY;
      long firstWidth = -1;
      String firstBad = null;
      while (labels.hasNext()) {
        Row r = labels.next();
        rows++;
        if (r.isNullAt(0)) {
          nulls++;
          firstBad = firstBad != null ? firstBad : where(rows - 1, partition, r) + ": null";
          continue;
        }
        Object value = r.get(0);
        if (firstWidth < 0) {
          firstWidth = width(value);
        }
        if (value instanceof Number n) {
          double d = n.doubleValue();
          lo = Math.min(lo, d);
          hi = Math.max(hi, d);
          if (firstBad == null && classes > 0 && (d < 0 || d >= classes)) {
            firstBad = where(rows - 1, partition, r) + ": " + d;
          }
        }
      }
      return List.of(new LabelStats(partition, rows, nulls, lo, hi, firstWidth, firstBad)).iterator();
    }

    private static String where(long offset, int partition, Row r) {
      String file = r.isNullAt(1) ? "" : r.getString(1);
      return "row " + offset + " of input partition " + partition + (file.isEmpty() ? "" : " (read from " + file + ")");
    }
  }
}
