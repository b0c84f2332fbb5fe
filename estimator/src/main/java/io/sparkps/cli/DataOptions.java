package io.sparkps.cli;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.param.TrainingConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Option;

/** Where the data is and which columns hold features and labels (shared by the commands). */
final class DataOptions {
  @Option(names = "--format", paramLabel = "FORMAT", description = "parquet, csv (with a header), libsvm or idx "
      + "(a prefix P with P-images-idx3-ubyte.gz and P-labels-idx1-ubyte.gz); default: from the path")
  String format;

  @Option(names = "--features", paramLabel = "COL",
      description = "the features column, a vector or an array of numbers (default: ${DEFAULT-VALUE})")
  String featuresCol = TrainingConfig.defaults().featuresCol();

  @Option(names = "--feature-cols", paramLabel = "COL", split = ",",
      description = "numeric columns to assemble into the features column instead")
  List<String> featureCols;

  @Option(names = "--label", paramLabel = "COL", description = "the label column (default: ${DEFAULT-VALUE})")
  String labelCol = TrainingConfig.defaults().labelCol();

  /** Reads {@code path} (the value of {@code flag}) as a DataFrame with the features column assembled if asked. */
  Dataset<Row> load(SparkSession spark, String path, String flag, int partitions) {
    String kind = format != null ? format.toLowerCase(Locale.ROOT) : guess(path, flag);
    Dataset<Row> data;
    try {
      data = switch (kind) {
        case "parquet" -> spark.read().parquet(existing(path, flag));
        case "csv" -> spark.read().option("header", "true").option("inferSchema", "true").csv(existing(path, flag));
        case "libsvm" -> spark.read().format("libsvm").load(existing(path, flag));
        case "idx" -> idx(spark, path, flag, partitions);
        default -> throw new UsageException("--format " + format + " is not known: use parquet, csv, libsvm or idx");
      };
    } catch (RuntimeException e) {
      if (e instanceof UsageException) {
        throw e;
      }
      throw new UsageException(flag + " " + path + " cannot be read as " + kind + ": " + SparkPsCli.firstLine(
          e.getMessage()), e);
    }
    if (featureCols != null && !featureCols.isEmpty()) {
      for (String c : featureCols) {
        require(data, c, "--feature-cols");
      }
      data = new VectorAssembler().setInputCols(featureCols.toArray(String[]::new)).setOutputCol(featuresCol)
          .transform(data);
    }
    return data;
  }

  /** Fails naming {@code flag} when {@code col} is not a column of {@code data}. */
  static void require(Dataset<Row> data, String col, String flag) {
    if (!Arrays.asList(data.columns()).contains(col)) {
      throw new UsageException(flag + ": column '" + col + "' is not in the data (columns: "
          + String.join(", ", data.columns()) + ")");
    }
  }

  private static String existing(String path, String flag) {
    if (!path.contains("://") && !Files.exists(Path.of(path))) {
      throw new UsageException(flag + " " + path + ": no such file or directory");
    }
    return path;
  }

  private static String guess(String path, String flag) {
    String p = path.toLowerCase(Locale.ROOT);
    if (Files.exists(Path.of(path + "-images-idx3-ubyte.gz")) || p.contains("idx")) {
      return "idx";
    }
    if (p.endsWith(".csv")) {
      return "csv";
    }
    if (p.endsWith(".libsvm") || p.endsWith(".svm")) {
      return "libsvm";
    }
    if (p.endsWith(".parquet") || Files.isDirectory(Path.of(path))) {
      return "parquet";
    }
    existing(path, flag);
    throw new UsageException(flag + " " + path + ": cannot tell the format from the name; give --format");
  }

  private static Dataset<Row> idx(SparkSession spark, String prefix, String flag, int partitions) {
    Path images = Path.of(prefix + "-images-idx3-ubyte.gz");
    Path labels = Path.of(prefix + "-labels-idx1-ubyte.gz");
    if (!Files.exists(images) || !Files.exists(labels)) {
      throw new UsageException(flag + " " + prefix + ": no " + images.getFileName() + " and " + labels.getFileName()
          + " there (an IDX prefix, e.g. " + IdxDataFrames.FASHION_MNIST.resolve("train") + ")");
    }
    try {
      return IdxDataFrames.read(spark, images, labels, 1.0 / 255, partitions);
    } catch (IOException e) {
      throw new UsageException(flag + " " + prefix + ": " + e.getMessage(), e);
    }
  }
}
