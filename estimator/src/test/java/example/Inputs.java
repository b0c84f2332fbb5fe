package example;

import io.sparkps.ml.InputFn;

/** A user's input functions as lambdas, outside SparkPS's packages. */
public final class Inputs {
  private Inputs() {}

  /** Parquet at {@code path}, as a lambda capturing it. */
  public static InputFn parquet(String path) {
    return spark -> spark.read().parquet(path);
  }
}
