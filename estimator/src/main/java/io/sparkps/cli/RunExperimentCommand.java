package io.sparkps.cli;

import io.sparkps.ml.Experiment;
import io.sparkps.ml.ExperimentFiles;
import java.io.IOException;
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
      description = "the serialized Experiment: in cluster mode, only its shipped copy in the working directory "
          + "is read; in client mode, this path")
  Path file;

  @Option(names = "--sha256", required = true, paramLabel = "HEX",
      description = "the file's SHA-256, as submitted; another file is not read")
  String sha256;

  @Option(names = "--allow-class", paramLabel = "CLASS",
      description = "a class the experiment holds beyond SparkPS's and the JDK's value classes (its InputFns), "
          + "repeatable; every other class is refused before it loads")
  java.util.List<String> allowed = new java.util.ArrayList<>();

  @Option(names = "--output", required = true, paramLabel = "DIR", description = "the run directory")
  String output;

  @Option(names = "--overwrite", description = "replace the files of a run already in --output (others are kept)")
  boolean overwrite;

  @Override
  public Integer call() throws Exception {
    // In a YARN container the submitter's path means nothing (or someone else's file): only the shipped copy counts.
    boolean cluster = "cluster".equals(System.getProperty("spark.submit.deployMode"));
    Path source = cluster ? Path.of(file.getFileName().toString()) : file;
    if (!Files.exists(source)) {
      throw new UsageException("--experiment " + file + ": " + (cluster ? "no shipped copy " + source
          + " in the working directory (submit it with --files)" : "no such file"));
    }
    Experiment experiment;
    try {
      experiment = ExperimentFiles.read(source, sha256, allowed);
    } catch (IOException | IllegalArgumentException e) {
      throw new UsageException("--experiment " + file + ": " + e.getMessage(), e);
    }
    SparkSession spark = Sessions.get(common.master, common.conf, experiment.numWorkers() + experiment.numPs() + 1);
    RunDirectory.Checked checked = RunDirectory.check(output, overwrite,
        spark.sparkContext().hadoopConfiguration(), spark.sparkContext().applicationId());
    var train = experiment.trainSpec().input().load(spark);
    var eval = experiment.evalSpec() == null || experiment.evalSpec().input() == null ? null
        : experiment.evalSpec().input().load(spark).limit(experiment.evalSpec().maxRows());
    RunDirectory dir = checked.create(); // once the inputs load: a refused command leaves no directory
    var summary = TrainingRun.execute(experiment.estimator(), train, eval, dir, false, SparkPsCli.OUT);
    SparkPsCli.OUT.println(TrainingRun.describe(summary, dir));
    return SparkPsCli.OK;
  }
}
