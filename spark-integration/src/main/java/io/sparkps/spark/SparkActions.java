package io.sparkps.spark;

import io.sparkps.spark.recovery.Supervisor;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Carries the supervisor's decisions out on the run's Spark jobs and executors. */
final class SparkActions implements Supervisor.Actions {
  private static final Logger LOG = LoggerFactory.getLogger(SparkActions.class);
  private final JavaSparkContext sc;
  private final String runId;
  private final PsJobs ps;

  SparkActions(JavaSparkContext sc, String runId, PsJobs ps) {
    this.sc = sc;
    this.runId = runId;
    this.ps = ps;
  }

  /** The decisions' limits for a run of {@code spec}. */
  static Supervisor.Policy policy(ClusterSpec spec) {
    return new Supervisor.Policy(spec.numPs(), spec.heartbeatInterval(), spec.roleTimeout(), spec.maxStageAttempts(),
        PsTask.ATTEMPTS_PER_LAUNCH);
  }

  @Override
  public String runId() {
    return runId;
  }

  @Override
  public String psEnded(int index) {
    return ps.ended(index);
  }

  @Override
  public int psLaunches(int index) {
    return ps.launches(index);
  }

  @Override
  public void relaunchPs(int index) {
    ps.relaunch(index);
  }

  /**
   * Asks the cluster manager to kill executor {@code executorId} and start another in its place
   * (what Spark itself does once an executor misses its heartbeats for {@code spark.network.timeout}):
   * a hung executor's task slots are free again at once. Not in local mode (the executor is the
   * driver) and not where the scheduler cannot kill executors; returns whether it was asked.
   */
  @Override
  public boolean killExecutor(String executorId, String reason) {
    if (executorId == null || executorId.isEmpty() || "driver".equals(executorId) || sc.sc().isLocal()) {
      return false;
    }
    boolean asked = sc.sc().killAndReplaceExecutor(executorId);
    LOG.info("SparkPS run {}: {} executor {} to be killed and replaced: {}", runId, asked ? "asked for" : "could not ask for",
        executorId, reason);
    return asked;
  }

  /** Kills the task attempts of the given Spark task ids (Spark then retries their barrier stage). */
  @Override
  public void killTasks(List<Long> taskIds, String reason) {
    taskIds.forEach(id -> sc.sc().killTaskAttempt(id, true, reason));
  }
}
