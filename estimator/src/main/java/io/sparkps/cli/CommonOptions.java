package io.sparkps.cli;

import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** Options every command takes: where Spark runs and how progress shows. */
final class CommonOptions {
  @Option(names = "--master", paramLabel = "URL", description = "Spark master (default: the one spark-submit "
      + "gives, else an embedded local[N] sized to the machine and the run)")
  String master;

  @Option(names = "--conf", paramLabel = "KEY=VALUE", description = "a Spark setting (repeatable)")
  Map<String, String> conf = new LinkedHashMap<>();

  @Option(names = "--no-progress", description = "plain log lines instead of a progress bar")
  boolean noProgress;
}
