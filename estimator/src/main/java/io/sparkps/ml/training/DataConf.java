package io.sparkps.ml.training;

import io.sparkps.ml.data.Minibatches;
import io.sparkps.spark.SparkPsConf;
import java.io.File;
import java.nio.file.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;

/**
 * How training data reaches and stays with the workers: the {@code spark.sparkps.data.*} settings
 * of {@link SparkPsConf} as the trainer uses them, and where a worker's spill file goes.
 */
public final class DataConf {
  private DataConf() {}

  /** Whether the input is shuffled even when its partitions could be given to the workers as they are. */
  static boolean alwaysShuffle(SparkSession spark) {
    return SparkPsConf.DATA_ALWAYS_SHUFFLE.get(spark.conf());
  }

  /** How much of a worker's partition stays in memory, and the shuffle window of a spilled one. */
  public static Minibatches.Limits limits(SparkSession spark) {
    return new Minibatches.Limits(SparkPsConf.DATA_IN_MEMORY_MAX.get(spark.conf()),
        SparkPsConf.DATA_SHUFFLE_WINDOW.get(spark.conf()));
  }

  /**
   * What a worker says (its log, its progress) when its partition went to a spill file: e.g. "worker
   * 0 spilled its 1000000 rows (368 MB) to /local/dir/file: more than spark.sparkps.data.inMemoryMax
   * (128 MiB)".
   */
  public static String spilled(int worker, long rows, Path file, long bytes, Minibatches.Limits limits) {
    return "worker " + worker + " spilled its " + rows + " rows (" + (bytes + 500_000) / 1_000_000 + " MB) to " + file
        + ": more than " + SparkPsConf.DATA_IN_MEMORY_MAX.key() + " (" + (limits.inMemoryMax() >> 20) + " MiB)";
  }

  /** A local directory of this executor for task {@code index}'s spill file (java.io.tmpdir outside Spark). */
  public static Path spillDir(int index) {
    SparkEnv env = SparkEnv.get();
    if (env != null && env.blockManager() != null) {
      File[] dirs = env.blockManager().diskBlockManager().localDirs();
      if (dirs.length > 0) {
        return dirs[Math.floorMod(index, dirs.length)].toPath();
      }
    }
    return Path.of(System.getProperty("java.io.tmpdir"));
  }
}
