package io.sparkps.cli;

import io.sparkps.ml.Experiment;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sparkps run-experiment}: trains a serialized {@link Experiment} (written by
 * {@link io.sparkps.ml.YarnExperiments}) into a run directory; the driver side of an Experiment
 * submitted to YARN.
 */
@Command(name = "run-experiment", mixinStandardHelpOptions = true,
    description = "Train a serialized Experiment (as submitted to YARN) into a run directory.")
final class RunExperimentCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Option(names = "--experiment", required = true, paramLabel = "FILE",
      description = "the serialized Experiment (a path, or a file shipped to the working directory)")
  Path file;

  @Option(names = "--output", required = true, paramLabel = "DIR", description = "the run directory")
  String output;

  @Override
  public Integer call() throws Exception {
    Path source = Files.exists(file) ? file : Path.of(file.getFileName().toString());
    if (!Files.exists(source)) {
      throw new UsageException("--experiment " + file + ": no such file here or in the working directory");
    }
    Experiment experiment;
    try (InputStream in = Files.newInputStream(source); ObjectInputStream objects = new ObjectInputStream(in)) {
      experiment = (Experiment) objects.readObject();
    } catch (IOException | ClassNotFoundException | ClassCastException e) {
      throw new UsageException("--experiment " + file + ": not a serialized Experiment this jar can read (" + e
          + "); its InputFns must be classes of this jar or of a jar shipped with it", e);
    }
    SparkSession spark = Sessions.get(common.master, common.conf, experiment.numWorkers() + experiment.numPs() + 1);
    RunDirectory dir = RunDirectory.prepare(output, true, spark.sparkContext().hadoopConfiguration());
    var train = experiment.trainSpec().input().load(spark);
    var eval = experiment.evalSpec() == null || experiment.evalSpec().input() == null ? null
        : experiment.evalSpec().input().load(spark).limit(experiment.evalSpec().maxRows());
    var summary = TrainingRun.execute(experiment.estimator(), train, eval, dir, false, SparkPsCli.OUT);
    SparkPsCli.OUT.println(TrainingRun.describe(summary, dir));
    return SparkPsCli.OK;
  }
}
