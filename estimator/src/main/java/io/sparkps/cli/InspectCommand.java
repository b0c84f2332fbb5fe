package io.sparkps.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.sparkps.ml.Dl4jModel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code sparkps inspect}: what a run directory or a saved model holds (local or any Hadoop file system). */
@Command(name = "inspect", mixinStandardHelpOptions = true,
    description = "Show what a run directory or saved model holds: provenance, params, metrics.")
final class InspectCommand implements Callable<Integer> {
  @Mixin
  CommonOptions common = new CommonOptions();

  @Parameters(paramLabel = "PATH", description = "a run directory or a saved model")
  String path;

  @Override
  public Integer call() throws Exception {
    Path dir = new Path(path);
    FileSystem fs = dir.getFileSystem(new Configuration());
    if (!fs.exists(dir)) {
      throw new UsageException("PATH " + path + ": no such file or directory");
    }
    Path summary = new Path(dir, "summary.json");
    if (fs.isFile(summary)) {
      JsonNode tree;
      try (var in = fs.open(summary)) {
        tree = TrainingRun.JSON.readTree(in);
      }
      long lines = 0;
      try (BufferedReader r = new BufferedReader(new InputStreamReader(fs.open(new Path(dir, "metrics.jsonl")),
          StandardCharsets.UTF_8))) {
        while (r.readLine() != null) {
          lines++;
        }
      }
      SparkPsCli.OUT.println("run directory " + fs.makeQualified(dir));
      SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(tree));
      SparkPsCli.OUT.println("metrics.jsonl: " + lines + " reports; report.html, model/, model.dl4j.zip");
      return SparkPsCli.OK;
    }
    Sessions.get(common.master, common.conf, 1);
    Dl4jModel model = ModelOptions.of(path).load();
    Map<String, Object> out = new TreeMap<>();
    out.put("uid", model.uid());
    out.put("classifier", model.isClassifier());
    out.put("provenance", model.provenance());
    if (model.summary() != null) {
      out.put("stageAttempts", model.summary().stageAttempts());
      out.put("psRecoveries", model.summary().psRecoveries().stream().map(Object::toString).toList());
      out.put("trainSeconds", model.summary().elapsed().toMillis() / 1000.0);
      out.put("lastEvaluation", model.summary().lastEvaluation());
    }
    SparkPsCli.OUT.println("saved model " + fs.makeQualified(dir));
    SparkPsCli.OUT.println(TrainingRun.JSON.writeValueAsString(out));
    return SparkPsCli.OK;
  }
}
