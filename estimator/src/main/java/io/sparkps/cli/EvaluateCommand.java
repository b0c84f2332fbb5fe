package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code sparkps evaluate}: a saved model's figures on labelled data, printed as JSON. */
@Command(name = "evaluate", mixinStandardHelpOptions = true, description = "Score a saved model on labelled data.")
final class EvaluateCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Mixin
  DataOptions columns = new DataOptions();

  @Mixin
  ModelOptions model = new ModelOptions();

  @Option(names = "--data", required = true, paramLabel = "PATH", description = "labelled data")
  String data;

  @Override
  public Integer call() throws Exception {
    SparkSession spark = Sessions.get(common.master, common.conf, 1);
    Dl4jModel m = model.load();
    Dataset<Row> frame = columns.load(spark, data, "--data", 2);
    m.set(m.featuresCol(), columns.featuresCol);
    Map<String, Double> metrics = Metrics.of(m, frame, columns.labelCol);
    SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(metrics));
    return SparkPsCli.OK;
  }
}
