package io.sparkps.cli;

import io.sparkps.ml.datasets.ClickThroughData;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sparkps generate click-through}: rows of Criteo's shape drawn from a planted model
 * ({@link ClickThroughData}), written as Parquet where Spark runs, with nothing downloaded. Rows
 * {@code [--from, --from + --rows)} are the same on every run, so a training set and a held-out
 * set are two ranges of one generator.
 */
@Command(name = "generate", mixinStandardHelpOptions = true, description = "Write a generated dataset as Parquet: "
    + "click-through (label, I1..I13, C1..C26 of Criteo's shape, clicks from a planted model).")
final class GenerateCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Parameters(index = "0", paramLabel = "DATASET", description = "the dataset: click-through")
  String dataset;

  @Option(names = "--rows", required = true, paramLabel = "N", description = "how many rows")
  long rows;

  @Option(names = "--from", paramLabel = "I", description = "the first row's index (default 0): held-out rows "
      + "are another range of the same generator")
  long from;

  @Option(names = "--scale", paramLabel = "F", description = "the fields' cardinalities times F (default 1: "
      + "Criteo Kaggle's, 33.76 million ids in all)")
  double scale = 1;

  @Option(names = "--seed", paramLabel = "S", description = "the planted model's seed (default 1)")
  long seed = 1;

  @Option(names = "--click-rate", paramLabel = "P", description = "the share of rows clicked (default 0.25)")
  double clickRate = 0.25;

  @Option(names = "--partitions", paramLabel = "N", description = "Parquet parts (default: one per million rows, "
      + "at least 1)")
  Integer partitions;

  @Option(names = "--planted-auc", description = "also print the AUC of the planted model on these rows (another pass)")
  boolean plantedAuc;

  @Option(names = "--output", required = true, paramLabel = "DIR", description = "where to write (a new or empty "
      + "directory)")
  String output;

  @Option(names = "--overwrite", description = "replace a dataset already in --output (a directory holding other "
      + "files is still refused)")
  boolean overwrite;

  @Override
  public Integer call() throws Exception {
    if (!"click-through".equals(dataset)) {
      throw new UsageException("unknown dataset '" + dataset + "': the one generated is click-through");
    }
    if (rows < 1 || from < 0) {
      throw new UsageException("--rows " + rows + " --from " + from + ": give --rows >= 1 and --from >= 0");
    }
    ClickThroughData data;
    try {
      data = ClickThroughData.builder().optSeed(seed).optScale(scale).optClickRate(clickRate).build();
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage().replace("scale", "--scale").replace("clickRate", "--click-rate"));
    }
    int parts = partitions != null ? partitions : (int) Math.max(1, Math.min(10_000, rows / 1_000_000));
    if (parts < 1) {
      throw new UsageException("--partitions " + parts + ": give 1 or more");
    }
    // An embedded Spark gets the machine's cores: parts are written by as many tasks at a time, not all at once.
    SparkSession spark = Sessions.get(common.master, common.conf, 1);
    RunDirectory.checkDatasetOutput(spark, output, overwrite, "the dataset written there before");
    Dataset<Row> generated = data.rows(spark, from, rows, parts);
    generated.write().mode("overwrite").parquet(output);
    StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "sparkps: %d click-through rows (%d to %d, "
        + "seed %d, %d ids in all) written to %s", rows, from, from + rows - 1, seed,
        data.cardinalities().stream().mapToLong(Long::longValue).sum(), output));
    if (plantedAuc) {
      line.append(String.format(Locale.ROOT, "; the planted model's AUC on them %.4f",
          data.plantedAuc(spark.read().parquet(output))));
    }
    SparkPsCli.OUT.println(line);
    return SparkPsCli.OK;
  }
}
