package io.sparkps.ml;

import io.sparkps.spark.Role;
import io.sparkps.spark.yarn.TaskSpec;
import io.sparkps.spark.yarn.YarnSubmitter;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Submitting an {@link Experiment} to YARN: the experiment is serialized to a private file shipped
 * with the application (see {@link ExperimentFiles}: its digest and the classes it may hold travel
 * in the arguments), and the shaded jar's {@code sparkps run-experiment} trains it in the driver
 * (here in client mode, in a YARN container in cluster mode) into a run directory. The staged
 * file is deleted when the application ends.
 */
public final class YarnExperiments {
  private YarnExperiments() {}

  /**
   * Sets {@code submitter}'s application to {@code experiment}: the shaded jar at {@code shadedJar},
   * the run directory {@code output} (a path the driver can write), the experiment written below
   * {@code staging}. The TaskSpecs must give the experiment's workers (chief + workers) and ps.
   */
  public static YarnSubmitter.Builder prepare(YarnSubmitter.Builder submitter, Map<Role, TaskSpec> specs,
      Experiment experiment, String shadedJar, String output, Path staging) throws IOException {
    int workers = instances(specs, Role.CHIEF) + instances(specs, Role.WORKER);
    if (workers != experiment.numWorkers() || instances(specs, Role.PS) != experiment.numPs()) {
      throw new IllegalArgumentException("the TaskSpecs give " + workers + " workers and " + instances(specs, Role.PS)
          + " ps but the experiment trains with " + experiment.numWorkers() + " workers and " + experiment.numPs()
          + " ps: make them agree (Experiment.builder().optCluster(workers, ps))");
    }
    if (experiment.evalSpec() != null && experiment.evalSpec().input() != null && instances(specs, Role.EVALUATOR) != 1) {
      throw new IllegalArgumentException("the experiment evaluates (it has an EvalSpec with an input) but the "
          + "evaluator's TaskSpec has " + instances(specs, Role.EVALUATOR) + " instances: give it 1");
    }
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment, staging);
    List<String> args = new ArrayList<>(List.of("run-experiment", "--experiment", staged.file().toString(),
        "--sha256", staged.sha256(), "--output", output));
    staged.extraClasses().forEach(c -> args.addAll(List.of("--allow-class", c)));
    specs.forEach(submitter::setTaskSpec);
    return submitter.optFiles(List.of(staged.file().toString())).optDeleteWhenDone(staged.file())
        .setApplication(shadedJar, "io.sparkps.cli.SparkPsCli", args);
  }

  private static int instances(Map<Role, TaskSpec> specs, Role role) {
    TaskSpec s = specs.get(role);
    return s == null ? 0 : s.instances();
  }
}
