package io.sparkps.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkps.ml.Dl4jModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code sparkps inspect}: what a run directory or a saved model holds. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
    description = "Show what a run directory or saved model holds: provenance, params, metrics.")
final class InspectCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Parameters(paramLabel = "PATH", description = "a run directory or a saved model")
  Path path;

  @Override
  public Integer call() throws Exception {
    if (!Files.exists(path)) {
      throw new UsageException("PATH " + path + ": no such file or directory");
    }
    Path summary = path.resolve("summary.json");
    if (Files.isRegularFile(summary)) {
      JsonNode tree = TrainingRun.JSON.readTree(summary.toFile());
      SparkPsCli.OUT.println("run directory " + path.toAbsolutePath());
      SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(tree));
      long lines;
      try (var stream = Files.lines(path.resolve("metrics.jsonl"))) {
        lines = stream.count();
      }
      SparkPsCli.OUT.println("metrics.jsonl: " + lines + " reports; report.html, model/, model.dl4j.zip");
      return SparkPsCli.OK;
    }
    Sessions.get(common.master, common.conf, 1);
    Dl4jModel model = ModelOptions.of(path.toString()).load();
    Map<String, Object> out = new TreeMap<>();
    out.put("uid", model.uid());
    out.put("classifier", model.isClassifier());
    out.put("provenance", model.provenance());
    if (model.summary() != null) {
      out.put("stageAttempts", model.summary().stageAttempts());
      out.put("trainSeconds", model.summary().elapsed().toMillis() / 1000.0);
      out.put("lastEvaluation", model.summary().lastEvaluation());
    }
    SparkPsCli.OUT.println("saved model " + path.toAbsolutePath());
    SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(out));
    return SparkPsCli.OK;
  }
}
