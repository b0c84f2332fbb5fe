package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sparkps predict}: adds a saved model's predictions to data and writes them as Parquet;
 * with a label column it also prints the accuracy (or R2).
 */
@Command(name = "predict", mixinStandardHelpOptions = true, description = "Predict with a saved model.")
final class PredictCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Mixin
  DataOptions columns = new DataOptions();

  @Mixin
  ModelOptions model = new ModelOptions();

  @Option(names = "--data", required = true, paramLabel = "PATH", description = "the data to predict")
  String data;

  @Option(names = "--output", paramLabel = "DIR", description = "where to write the predictions (Parquet; a new "
      + "or empty directory)")
  String output;

  @Option(names = "--overwrite", description = "replace the predictions already in --output (a directory holding "
      + "other files is still refused)")
  boolean overwrite;

  @Override
  public Integer call() throws Exception {
    ModelOptions.Scoring s = model.scoring(common, columns, data);
    SparkSession spark = s.spark();
    Dl4jModel m = s.model();
    Dataset<Row> frame = s.frame();
    Dataset<Row> predicted = m.transform(frame);
    if (output != null) {
      RunDirectory.checkDatasetOutput(spark, output, overwrite, "the predictions written there before");
      predicted.write().mode("overwrite").parquet(output);
    }
    StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "sparkps: %d predictions",
        output == null ? predicted.count() : spark.read().parquet(output).count()));
    if (output != null) {
      line.append(" written to ").append(output);
    }
    if (Arrays.asList(frame.columns()).contains(columns.labelCol)) {
      var metrics = Metrics.of(m, frame, columns.labelCol);
      String figures = Metrics.line(metrics);
      if (figures != null) {
        line.append("; ").append(figures);
      }
    }
    SparkPsCli.OUT.println(line);
    return SparkPsCli.OK;
  }
}
