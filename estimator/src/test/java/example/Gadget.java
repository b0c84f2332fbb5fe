package example;

import io.sparkps.ml.InputFn;
import java.io.IOException;
import java.io.ObjectInputStream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * A user's class outside SparkPS whose {@code readObject} counts its calls: the stand-in for a
 * deserialization gadget, whose {@code readObject} would do harm.
 */
public final class Gadget implements InputFn {
  private static final long serialVersionUID = 1L;
  public static final java.util.concurrent.atomic.AtomicInteger READS = new java.util.concurrent.atomic.AtomicInteger();

  private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
    in.defaultReadObject();
    READS.incrementAndGet();
  }

  @Override
  public Dataset<Row> load(SparkSession spark) {
    throw new UnsupportedOperationException("a gadget reads no data");
  }
}
