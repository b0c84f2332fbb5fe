package io.sparkps.ml;

import org.apache.spark.sql.SparkSession;

/** The embedded Spark of the estimator's tests: local[n] on loopback, no UI. */
public final class LocalSpark {
  private LocalSpark() {}

  /** A session with {@code slots} task slots named {@code name}. */
  public static SparkSession start(int slots, String name) {
    return SparkSession.builder().master("local[" + slots + "]").appName(name).config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate();
  }
}
