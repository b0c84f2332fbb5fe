package io.sparkps.ml;

import io.sparkps.ml.data.Minibatches;
import java.io.File;
import java.nio.file.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.SparkSession;

/**
 * How training data reaches and stays with the workers, from the Spark conf: {@value #SHUFFLE}
 * ({@code auto}: input partitions that can be balanced over the workers are given to them without
 * a shuffle; {@code always}: shuffled, e.g. when each partition holds only some classes),
 * {@value #IN_MEMORY_MAX} (bytes of float32 records a worker keeps in memory; a larger partition
 * spills to a file in the executor's local directories) and {@value #SHUFFLE_WINDOW} (records
 * shuffled together when reading a spill file).
 */
final class DataConf {
  static final String SHUFFLE = "spark.sparkps.data.shuffle";
  static final String IN_MEMORY_MAX = "spark.sparkps.data.inMemoryMax";
  static final String SHUFFLE_WINDOW = "spark.sparkps.data.shuffleWindow";
  static final String DEFAULT_IN_MEMORY_MAX = "128m";
  static final int DEFAULT_SHUFFLE_WINDOW = 16384;

  private DataConf() {}

  /** Whether the input is shuffled even when its partitions could be given to the workers as they are. */
  static boolean alwaysShuffle(SparkSession spark) {
    String value = spark.conf().get(SHUFFLE, "auto");
    return switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
      case "auto" -> false;
      case "always" -> true;
      default -> throw new IllegalArgumentException(SHUFFLE + " is '" + value + "': set it to auto (shuffle only "
          + "input that cannot be balanced over the workers) or always");
    };
  }

  static Minibatches.Limits limits(SparkSession spark) {
    String max = spark.conf().get(IN_MEMORY_MAX, DEFAULT_IN_MEMORY_MAX);
    String window = spark.conf().get(SHUFFLE_WINDOW, String.valueOf(DEFAULT_SHUFFLE_WINDOW));
    long bytes;
    try {
      bytes = JavaUtils.byteStringAsBytes(max.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(IN_MEMORY_MAX + " is '" + max + "': give a size such as 128m or 2g "
          + "(0 spills every partition)");
    }
    int rows;
    try {
      rows = Integer.parseInt(window.trim());
    } catch (NumberFormatException e) {
      rows = -1;
    }
    if (rows < 1) {
      throw new IllegalArgumentException(SHUFFLE_WINDOW + " is '" + window + "': give a number of rows >= 1, such as "
          + DEFAULT_SHUFFLE_WINDOW);
    }
    return new Minibatches.Limits(bytes, rows);
  }

  /** A local directory of this executor for task {@code index}'s spill file (java.io.tmpdir outside Spark). */
  static Path spillDir(int index) {
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
