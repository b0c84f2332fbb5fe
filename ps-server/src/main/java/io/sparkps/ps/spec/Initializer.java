package io.sparkps.ps.spec;

import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.zip.CRC32C;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * How a variable gets its first value.
 *
 * <p>Random initializers are computed by each shard from the seed and each element's position in
 * the whole variable, so a split variable gets the same values whatever the number of shards and
 * whichever task initializes it.
 */
public final class Initializer implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** The initializer's form. */
  public enum Kind { ZEROS, CONSTANT, UNIFORM, NORMAL, VALUES }

  private final Kind kind;
  private final double a;
  private final double b;
  private final long seed;
  private final transient INDArray values;
  private final long valuesDigest;

  private Initializer(Kind kind, double a, double b, long seed, INDArray values, long digest) {
    this.kind = kind;
    this.a = a;
    this.b = b;
    this.seed = seed;
    this.values = values;
    this.valuesDigest = digest;
  }

  /** All zeros. */
  public static Initializer zeros() {
    return new Initializer(Kind.ZEROS, 0, 0, 0, null, 0);
  }

  /** Every element {@code value}. */
  public static Initializer constant(double value) {
    return new Initializer(Kind.CONSTANT, value, 0, 0, null, 0);
  }

  /** Uniform on {@code [low, high)}, reproducible from {@code seed}. */
  public static Initializer uniform(double low, double high, long seed) {
    if (!(low < high)) {
      throw new IllegalArgumentException("uniform needs low < high, got [" + low + ", " + high + ")");
    }
    return new Initializer(Kind.UNIFORM, low, high, seed, null, 0);
  }

  /** Normal with {@code mean} and {@code stddev}, reproducible from {@code seed}. */
  public static Initializer normal(double mean, double stddev, long seed) {
    if (!(stddev >= 0)) {
      throw new IllegalArgumentException("normal needs stddev >= 0, got " + stddev);
    }
    return new Initializer(Kind.NORMAL, mean, stddev, seed, null, 0);
  }

  /**
   * Exactly these values (converted to float32), e.g. the parameters of a DL4J network. The
   * values are sent when the variable is initialized; a digest of them is part of the spec, so
   * two tasks that create the same variable with different values get a conflict error.
   */
  public static Initializer values(INDArray values) {
    Objects.requireNonNull(values, "values");
    INDArray floats = values.dataType() == DataType.FLOAT ? values : values.castTo(DataType.FLOAT);
    INDArray c = floats.isView() || floats.ordering() != 'c' ? floats.dup('c') : floats;
    return new Initializer(Kind.VALUES, 0, 0, 0, c, digest(c));
  }

  private static long digest(INDArray array) {
    ByteBuffer bytes = array.data().asNio();
    bytes.position((int) (array.offset() * 4)).limit((int) ((array.offset() + array.length()) * 4));
    CRC32C crc = new CRC32C();
    crc.update(bytes);
    return (array.length() << 32) ^ crc.getValue();
  }

  /** The form. */
  public Kind kind() {
    return kind;
  }

  /** The constant, the uniform's low end, or the normal's mean. */
  public double a() {
    return a;
  }

  /** The uniform's high end or the normal's standard deviation. */
  public double b() {
    return b;
  }

  /** The random seed. */
  public long seed() {
    return seed;
  }

  /** The values of a VALUES initializer (float32, 'c' order), or null. */
  public INDArray values() {
    return values;
  }

  /** A digest of a VALUES initializer's values, 0 for the other forms. */
  public long valuesDigest() {
    return valuesDigest;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Initializer i && i.kind == kind && i.a == a && i.b == b && i.seed == seed
        && i.valuesDigest == valuesDigest;
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, a, b, seed, valuesDigest);
  }

  @Override
  public String toString() {
    return switch (kind) {
      case ZEROS -> "zeros";
      case CONSTANT -> "constant(" + a + ")";
      case UNIFORM -> "uniform(" + a + ", " + b + ", seed=" + seed + ")";
      case NORMAL -> "normal(" + a + ", " + b + ", seed=" + seed + ")";
      case VALUES -> "values(digest=" + Long.toHexString(valuesDigest) + ")";
    };
  }
}
