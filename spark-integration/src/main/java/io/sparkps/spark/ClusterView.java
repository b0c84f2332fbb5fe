package io.sparkps.spark;

import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.spark.recovery.PsRecovery;
import java.util.List;

/**
 * A snapshot of a live (or finished) run, for a driver or a notebook.
 *
 * @param status the job's status
 * @param roles every registered task: role, index, host, attempt and latest progress
 * @param variables the ps variables with shard, rows and version (empty once the ps tasks stopped)
 * @param psRecoveries the ps tasks lost so far, and how each came back
 * @param resources what Spark gave each registered task: its cores and custom resources (GPUs)
 */
public record ClusterView(JobStatus status, List<TaskProgress> roles, List<VariableInfo> variables,
    List<PsRecovery> psRecoveries, List<TaskResources> resources) {
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("SparkPS run: ").append(status).append('\n');
    for (TaskProgress r : roles) {
      sb.append(String.format("  %-9s %d  %s  attempt %d  step %d  %s  (%d ms ago)%n", r.role(), r.index(), r.host(),
          r.attempt(), r.step(), r.metrics(), r.ageMillis()));
    }
    variables.forEach(v -> sb.append("  ").append(v).append('\n'));
    psRecoveries.forEach(r -> sb.append("  ").append(r).append('\n'));
    resources.forEach(r -> sb.append("  ").append(r).append('\n'));
    return sb.toString();
  }
}
