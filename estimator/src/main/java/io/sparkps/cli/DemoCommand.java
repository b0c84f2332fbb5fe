package io.sparkps.cli;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.Prototypes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sparkps demo}: Fashion-MNIST end to end (784-256-10 MLP, 2 workers, 1 ps, evaluation on
 * the test set), from Debian's {@code dataset-fashion-mnist}; without it, on a generated data set
 * of the same shape, saying so.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Train on Fashion-MNIST end to end.")
final class DemoCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Option(names = "--dataset", paramLabel = "DIR", description = "the folder of the Fashion-MNIST IDX files "
      + "(default: /usr/share/datasets/fashion-mnist)")
  Path dataset = IdxDataFrames.FASHION_MNIST;

  @Option(names = "--epochs", defaultValue = "2", description = "passes over the data (default: ${DEFAULT-VALUE})")
  int epochs;

  @Option(names = "--workers", defaultValue = "2", description = "workers (default: ${DEFAULT-VALUE})")
  int workers;

  @Option(names = "--output", paramLabel = "DIR", description = "the run directory (default: sparkps-demo, or "
      + "sparkps-demo-2, -3, ... when that exists: an earlier run is kept)")
  String output;

  @Option(names = "--overwrite", description = "replace the files of a run already in --output (others are kept)")
  boolean overwrite;

  @Override
  public Integer call() throws Exception {
    SparkSession spark = Sessions.get(common.master, common.conf, workers + 2);
    var conf = spark.sparkContext().hadoopConfiguration();
    RunDirectory dir = RunDirectory.prepare(output != null ? output : RunDirectory.firstFree("sparkps-demo", conf),
        overwrite, conf, spark.sparkContext().applicationId());
    SparkPsCli.OUT.println("sparkps demo: the run directory is " + dir);
    Dataset<Row> train;
    Dataset<Row> test;
    if (Files.exists(dataset.resolve("train-images-idx3-ubyte.gz"))) {
      SparkPsCli.OUT.println("sparkps demo: Fashion-MNIST from " + dataset);
      train = IdxDataFrames.fashionMnist(spark, dataset, "train", workers).cache();
      test = IdxDataFrames.fashionMnist(spark, dataset, "t10k", workers).cache();
    } else {
      SparkPsCli.OUT.println("sparkps demo: Fashion-MNIST is not installed at " + dataset + " (install it with "
          + "'apt-get install dataset-fashion-mnist'); training on a GENERATED data set of the same shape instead "
          + "(10 classes of 28x28 noisy prototypes), so the figures below say nothing about Fashion-MNIST");
      train = Prototypes.dataFrame(spark, 12_000, 1, workers).cache();
      test = Prototypes.dataFrame(spark, 2_000, 2, workers).cache();
    }
    TrainCommand t = new TrainCommand();
    t.columns.featuresCol = "features";
    t.columns.labelCol = "label";
    t.network = "mlp";
    t.workers = workers;
    t.ps = 1;
    t.consistency = io.sparkps.ps.spec.Consistency.SYNC;
    t.epochs = epochs;
    t.batchSize = 64;
    t.seed = 42;
    t.learningRate = 1e-3;
    t.checkpointInterval = 0; // automatic, as the defaults
    t.evalEverySeconds = 2;
    var summary = TrainingRun.execute(t.estimator(train), train, test.limit(10_000), dir,
        !common.noProgress && ConsoleProgress.terminal(), SparkPsCli.OUT);
    SparkPsCli.OUT.println(TrainingRun.describe(summary, dir));
    SparkPsCli.OUT.println("sparkps demo: open " + dir + "/report.html for the plots");
    return SparkPsCli.OK;
  }
}
