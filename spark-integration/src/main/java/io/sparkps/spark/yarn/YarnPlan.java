package io.sparkps.spark.yarn;

import io.sparkps.spark.Role;
import io.sparkps.spark.SparkPsConf;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How per-role {@link TaskSpec}s become the settings of one Spark application on YARN. Spark gives
 * all executors of an application one size, and barrier mode rules out dynamic allocation, so:
 *
 * <table>
 *   <caption>TaskSpecs to Spark settings</caption>
 *   <tr><th>asked</th><th>Spark setting</th></tr>
 *   <tr><td>instances of chief + workers + ps + evaluator</td><td>{@code spark.executor.instances}
 *       (one task per executor)</td></tr>
 *   <tr><td>largest vcores</td><td>{@code spark.executor.cores} = {@code spark.task.cpus}, and
 *       {@code OMP_NUM_THREADS} in the executors</td></tr>
 *   <tr><td>largest memoryMb (the whole container)</td><td>{@code spark.executor.memory} +
 *       {@code spark.executor.memoryOverhead} (10%, at least 384 MiB)</td></tr>
 *   <tr><td>node label (one for all roles)</td><td>{@code spark.yarn.executor.nodeLabelExpression}</td></tr>
 *   <tr><td>largest gpus</td><td>{@code spark.executor.resource.gpu.amount} =
 *       {@code spark.task.resource.gpu.amount}</td></tr>
 *   <tr><td>the ps's and the evaluator's vcores</td><td>{@link SparkPsConf#PS_CPUS} and {@link
 *       SparkPsConf#EVALUATOR_CPUS}: through task resource profiles (Spark 3.5.1+ on YARN) their
 *       tasks hold those cores and no GPU of their executors</td></tr>
 *   <tr><td>queue, name, max attempts</td><td>{@code spark.yarn.queue}, {@code spark.app.name},
 *       {@code spark.yarn.maxAppAttempts}</td></tr>
 *   <tr><td>environment</td><td>{@code spark.executorEnv.*} and {@code spark.yarn.appMasterEnv.*}</td></tr>
 *   <tr><td>extra Hadoop file systems</td><td>{@code spark.kerberos.access.hadoopFileSystems}</td></tr>
 *   <tr><td>always</td><td>{@code spark.dynamicAllocation.enabled=false},
 *       {@code spark.scheduler.minRegisteredResourcesRatio=1.0}</td></tr>
 * </table>
 *
 * <p>Where roles ask for different sizes or labels, every executor gets the largest size (and
 * the workers' label), and {@link #notes()} says so.
 *
 * @param conf the Spark settings, in a stable order
 * @param notes what the mapping had to change, one sentence each
 * @param executors executors (= tasks) the application asks for
 * @param containerMb memory of each executor container
 * @param executorCores cores of each executor
 * @param nodeLabel the label all executors ask for, or null
 */
public record YarnPlan(Map<String, String> conf, List<String> notes, int executors, int containerMb,
    int executorCores, String nodeLabel) {
  static final int MIN_OVERHEAD_MB = 384;

  /** The plan for {@code specs} (chief, worker, ps and evaluator; missing roles count 0 instances). */
  static YarnPlan of(Map<Role, TaskSpec> specs, Map<String, String> env) {
    Map<Role, TaskSpec> roles = new EnumMap<>(specs);
    TaskSpec chief = roles.get(Role.CHIEF);
    if (chief == null || chief.instances() != 1) {
      throw new IllegalArgumentException("the chief's TaskSpec must have exactly 1 instance (it is worker 0), got "
          + (chief == null ? "none" : chief.instances()));
    }
    TaskSpec ps = roles.get(Role.PS);
    if (ps == null || ps.instances() < 1) {
      throw new IllegalArgumentException("the ps TaskSpec must have at least 1 instance");
    }
    TaskSpec evaluator = roles.get(Role.EVALUATOR);
    if (evaluator != null && evaluator.instances() > 1) {
      throw new IllegalArgumentException("the evaluator TaskSpec has " + evaluator.instances() + " instances; there "
          + "is at most 1 evaluator");
    }
    roles.values().removeIf(s -> s.instances() == 0);
    int executors = roles.values().stream().mapToInt(TaskSpec::instances).sum();
    int cores = roles.values().stream().mapToInt(TaskSpec::vcores).max().orElseThrow();
    int container = roles.values().stream().mapToInt(TaskSpec::memoryMb).max().orElseThrow();
    int gpus = roles.values().stream().mapToInt(TaskSpec::gpus).max().orElseThrow();
    int overhead = Math.max(MIN_OVERHEAD_MB, (int) Math.ceil(container / 11.0));
    List<String> notes = new ArrayList<>();
    roles.forEach((role, s) -> {
      if (s.memoryMb() < container || s.vcores() < cores || s.gpus() < gpus) {
        notes.add(name(role) + " asked for " + s.memoryMb() + " MiB, " + s.vcores() + " vcores, " + s.gpus()
            + " GPUs but gets " + container + " MiB, " + cores + " vcores, " + gpus + " GPUs: Spark sizes all "
            + "executors of an application alike, so each gets the largest role's size");
      }
    });
    Set<String> labels = new LinkedHashSet<>();
    roles.values().forEach(s -> labels.add(s.nodeLabel() == null ? "" : s.nodeLabel()));
    String label = null;
    if (labels.size() == 1) {
      label = labels.iterator().next().isEmpty() ? null : labels.iterator().next();
    } else {
      TaskSpec workers = roles.getOrDefault(Role.WORKER, chief);
      label = workers.nodeLabel() != null ? workers.nodeLabel() : chief.nodeLabel();
      notes.add("roles ask for different node labels " + labels.stream().map(l -> l.isEmpty() ? "(none)" : l)
          .toList() + ": Spark applies one label expression to all executors of an application, so all use "
          + (label == null ? "the default partition" : "'" + label + "'") + " (the workers' choice)");
    }
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.executor.instances", Integer.toString(executors));
    conf.put("spark.executor.cores", Integer.toString(cores));
    conf.put("spark.task.cpus", Integer.toString(cores));
    conf.put("spark.executor.memory", (container - overhead) + "m");
    conf.put("spark.executor.memoryOverhead", overhead + "m");
    conf.put("spark.dynamicAllocation.enabled", "false");
    conf.put("spark.scheduler.minRegisteredResourcesRatio", "1.0");
    if (label != null) {
      conf.put("spark.yarn.executor.nodeLabelExpression", label);
    }
    if (gpus > 0) {
      conf.put("spark.executor.resource.gpu.amount", Integer.toString(gpus));
      conf.put("spark.task.resource.gpu.amount", Integer.toString(gpus));
    }
    conf.put("spark.executorEnv.OMP_NUM_THREADS", Integer.toString(cores));
    conf.put(SparkPsConf.PS_CPUS.key(), Integer.toString(ps.vcores()));
    if (evaluator != null && evaluator.instances() > 0) {
      conf.put(SparkPsConf.EVALUATOR_CPUS.key(), Integer.toString(evaluator.vcores()));
    }
    env.forEach((k, v) -> {
      conf.put("spark.executorEnv." + k, v);
      conf.put("spark.yarn.appMasterEnv." + k, v);
    });
    return new YarnPlan(conf, List.copyOf(notes), executors, container, cores, label);
  }

  private static String name(Role role) {
    return role.name().toLowerCase();
  }
}
