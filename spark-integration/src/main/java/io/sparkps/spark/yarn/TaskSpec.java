package io.sparkps.spark.yarn;

/**
 * What one role's tasks need from YARN, as in tf-yarn: container memory (MiB, Spark's memory
 * overhead included), virtual cores, how many tasks, an optional node label (e.g. {@code gpu}) and
 * GPUs per task.
 *
 * @param memoryMb container memory per task in MiB (&gt;= 512)
 * @param vcores virtual cores per task (&gt;= 1)
 * @param instances tasks of the role (&gt;= 0)
 * @param nodeLabel the node label expression the containers need, or null for the default partition
 * @param gpus GPUs per task (&gt;= 0)
 */
public record TaskSpec(int memoryMb, int vcores, int instances, String nodeLabel, int gpus) {
  /** Checks the values, naming the one at fault. */
  public TaskSpec {
    if (memoryMb < 512) {
      throw new IllegalArgumentException("memoryMb is " + memoryMb + ": a task needs at least 512 MiB");
    }
    if (vcores < 1 || instances < 0 || gpus < 0) {
      throw new IllegalArgumentException("vcores (" + vcores + ") must be >= 1, instances (" + instances
          + ") and gpus (" + gpus + ") >= 0");
    }
    if (nodeLabel != null && nodeLabel.isBlank()) {
      nodeLabel = null;
    }
  }

  /** {@code instances} tasks of {@code memoryMb} MiB and {@code vcores} cores, on unlabelled nodes, without GPUs. */
  public static TaskSpec of(int memoryMb, int vcores, int instances) {
    return new TaskSpec(memoryMb, vcores, instances, null, 0);
  }

  /** The same on nodes with {@code label}. */
  public TaskSpec withNodeLabel(String label) {
    return new TaskSpec(memoryMb, vcores, instances, label, gpus);
  }

  /** The same with {@code n} GPUs per task. */
  public TaskSpec withGpus(int n) {
    return new TaskSpec(memoryMb, vcores, instances, nodeLabel, n);
  }
}
