package io.sparkps.spark;

import io.sparkps.spark.coord.Member;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.FailureReport;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaFutureAction;

/**
 * Watches a run's roles from the driver while the barrier stage runs (called every 100 ms): a ps
 * whose task ended, that a worker could not reach and that has not sent a heartbeat since (three
 * intervals, at least 1.5 s), or that was silent for longer than the role timeout, is declared lost (its
 * clients fail their calls there) and relaunched; the workers' clients refill the replacement. A
 * worker silent for that long has its stage attempt killed, with a transient failure that names
 * it, so that Spark retries the stage well before its own network timeout.
 */
final class Supervisor {
  private final Launcher<?, ?> launcher;
  private final Registry registry;
  private final ClusterSpec spec;
  private static final Duration MIN_UNREACHABLE_GRACE = Duration.ofMillis(1500);
  private final Set<Integer> killedAttempts = new HashSet<>();

  Supervisor(Launcher<?, ?> launcher, Registry registry, ClusterSpec spec) {
    this.launcher = launcher;
    this.registry = registry;
    this.spec = spec;
  }

  /** One look at the roles; throws when a ps was lost more often than the run allows. */
  void check() {
    if (registry.isStopping()) {
      return;
    }
    for (int i = 0; i < spec.numPs(); i++) {
      JavaFutureAction<Void> job = launcher.psJob(i);
      if (job != null && job.isDone()) {
        String address = registry.psAddresses().get(i);
        replace(i, "its task ended" + ended(job) + (address == null ? "" : " at " + address));
      }
    }
    // Three heartbeats, and never under 1.5 s: a loaded executor may miss a short beat or two.
    Duration grace = spec.heartbeatInterval().multipliedBy(3);
    grace = grace.compareTo(MIN_UNREACHABLE_GRACE) < 0 ? MIN_UNREACHABLE_GRACE : grace;
    for (int i : registry.unreachable(grace)) {
      replace(i, "a worker could not reach it and it was silent for " + grace.toMillis() + " ms since");
    }
    long now = System.nanoTime();
    for (Member m : registry.silent(spec.roleTimeout())) {
      String silence = m.role().name().toLowerCase() + " " + m.index() + " on " + m.host() + " (executor "
          + m.executorId() + ") was silent for " + String.format("%.1f", (now - m.lastSeenNanos()) / 1e9)
          + " s, longer than the role timeout of " + spec.roleTimeout().toMillis() / 1000.0 + " s";
      if (m.role() == io.sparkps.spark.coord.proto.Role.PS) {
        replace(m.index(), "it was silent: " + silence);
      } else if (killedAttempts.add(m.attempt())) {
        killAttempt(m, silence);
      }
    }
  }

  private void replace(int index, String reason) {
    if (!registry.declarePsLost(index, reason, registry.maxWorkerStep())
        && launcher.psJob(index) != null && !launcher.psJob(index).isDone()) {
      return; // declared lost already and its replacement is on its way
    }
    if (launcher.psLaunches(index) > spec.maxStageAttempts()) {
      throw new TrainingFailure("ps " + index + " was lost " + launcher.psLaunches(index) + " times, more than "
          + "maxStageAttempts (" + spec.maxStageAttempts() + ") allows; the last time because " + reason
          + ". See its executors' logs", Role.PS, index, null, launcher.psLaunches(index), null, null);
    }
    registry.retirePsAttemptsBefore(index, launcher.psLaunches(index) * PsTask.ATTEMPTS_PER_LAUNCH);
    launcher.relaunchPs(index);
  }

  /** Records the silent worker's failure (transient: another attempt may get past it) and kills the attempt's tasks. */
  private void killAttempt(Member silent, String silence) {
    registry.fail(FailureReport.newBuilder().setRole(silent.role()).setIndex(silent.index()).setHost(silent.host())
        .setAttempt(silent.attempt()).setError(RemoteErrors.toProto(new java.util.concurrent.TimeoutException(silence
            + "; its stage attempt was killed to be retried")))
        .setDeterministic(false).build());
    List<Long> tasks = registry.workerTasks(silent.attempt());
    launcher.killTasks(tasks, "sparkps: " + silence);
  }

  private static String ended(JavaFutureAction<Void> job) {
    try {
      job.get(0, TimeUnit.MILLISECONDS);
      return "";
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable c = e.getCause();
      return " (" + (c == null ? e : c).toString().lines().findFirst().orElse("") + ")";
    } catch (Exception e) {
      return " (" + e + ")";
    }
  }
}
