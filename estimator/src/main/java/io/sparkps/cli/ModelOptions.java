package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** {@code --model}: a saved model, or a run directory holding one. */
final class ModelOptions {
  @Option(names = "--model", required = true, paramLabel = "PATH",
      description = "a saved Dl4jModel, or a run directory (its model/)")
  String model;

  static ModelOptions of(String path) {
    ModelOptions o = new ModelOptions();
    o.model = path;
    return o;
  }

  Dl4jModel load() {
    String path = model;
    if (!path.contains("://")) {
      Path p = Path.of(path);
      if (Files.isDirectory(p.resolve("model"))) {
        p = p.resolve("model");
      }
      if (!Files.isDirectory(p.resolve("metadata"))) {
        throw new UsageException("--model " + model + ": no saved model there (a directory written by "
            + "Dl4jModel.write().save or a run directory)");
      }
      path = p.toUri().toString();
    }
    try {
      return Dl4jModel.load(path);
    } catch (RuntimeException e) {
      throw new UsageException("--model " + model + ": cannot load it (" + SparkPsCli.firstLine(e.getMessage()) + ")",
          e);
    }
  }
}
