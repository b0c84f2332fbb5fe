package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import picocli.CommandLine.Option;

/** {@code --model}: a saved model, or a run directory holding one. */
final class ModelOptions {
  @Option(names = "--model", required = true, paramLabel = "PATH",
      description = "a saved Dl4jModel, or a run directory (its model/)")
  String model;

  @Option(names = "--tables-scoring", paramLabel = "MODE", defaultValue = "auto", description = "how an embedding "
      + "model reads its tables: load (each executor loads them), join (the rows' ids are joined with them: tables "
      + "larger than an executor) or auto (join when the tables exceed a quarter of an executor's heap; default)")
  String tablesScoring = "auto";

  /** A saved model to score {@code data} with: the session, the model (reading {@code columns}' features), the frame. */
  record Scoring(org.apache.spark.sql.SparkSession spark, Dl4jModel model,
      org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> frame) {}

  /** Starts the session, loads the model and the data of {@code --data}. */
  Scoring scoring(CommonOptions common, DataOptions columns, String data) {
    org.apache.spark.sql.SparkSession spark = Sessions.get(common.master, common.conf, 1);
    Dl4jModel m = load();
    org.apache.spark.sql.Dataset<org.apache.spark.sql.Row> frame = columns.load(spark, data, "--data", 2);
    m.set(m.featuresCol(), columns.featuresCol);
    if (!java.util.List.of("auto", "load", "join").contains(tablesScoring)) {
      throw new UsageException("--tables-scoring " + tablesScoring + ": it is auto, load or join");
    }
    m.setTablesScoring(tablesScoring);
    return new Scoring(spark, m, frame);
  }

  static ModelOptions of(String path) {
    ModelOptions o = new ModelOptions();
    o.model = path;
    return o;
  }

  Dl4jModel load() {
    String uri;
    try {
      org.apache.hadoop.fs.Path p = new org.apache.hadoop.fs.Path(model);
      org.apache.hadoop.fs.FileSystem fs = p.getFileSystem(new org.apache.hadoop.conf.Configuration());
      if (fs.isDirectory(new org.apache.hadoop.fs.Path(p, "model"))) {
        p = new org.apache.hadoop.fs.Path(p, "model"); // a run directory
      }
      if (!fs.isDirectory(new org.apache.hadoop.fs.Path(p, "metadata"))) {
        throw new UsageException("--model " + model + ": no saved model there (a directory written by "
            + "Dl4jModel.write().save or a run directory)");
      }
      uri = fs.makeQualified(p).toUri().toString();
    } catch (java.io.IOException e) {
      throw new UsageException("--model " + model + ": cannot read it (" + e.getMessage() + ")", e);
    }
    try {
      return Dl4jModel.load(uri);
    } catch (RuntimeException e) {
      throw new UsageException("--model " + model + ": cannot load it (" + SparkPsCli.firstLine(e.getMessage()) + ")",
          e);
    }
  }
}
