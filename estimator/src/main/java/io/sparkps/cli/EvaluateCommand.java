package io.sparkps.cli;

import java.util.Map;
import java.util.concurrent.Callable;
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
    ModelOptions.Scoring s = model.scoring(common, columns, data);
    Map<String, Double> metrics = Metrics.of(s.model(), s.frame(), columns.labelCol);
    SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(metrics));
    return SparkPsCli.OK;
  }
}
