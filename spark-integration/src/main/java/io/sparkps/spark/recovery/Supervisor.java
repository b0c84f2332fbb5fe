package io.sparkps.spark.recovery;

import io.sparkps.spark.coord.Member;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.WireErrors;
import io.sparkps.spark.coord.proto.FailureReport;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a run's roles from the driver while the barrier stage runs (called every 100 ms): a ps
 * whose task ended, that a worker could not reach and that has not sent a heartbeat since (three
 * intervals, at least 1.5 s), or that was silent for longer than the role timeout, is declared lost (its
 * clients fail their calls there) and relaunched; the workers' clients refill the replacement. A
 * worker silent for that long has its stage attempt killed, with a transient failure that names
 * it, so that Spark retries the stage well before its own network timeout. A silent role's
 * executor is killed and replaced through Spark (a hung process holds its task slot, which the
 * relaunch or the retry may need when every slot is busy). Each decision is logged at INFO.
 *
 * <p>The decisions are this class's; what carries them out is {@link Actions} (the run's Spark
 * jobs), and time is the {@link Registry}'s clock, so that tests drive both. Called by one thread
 * (the run's lifecycle thread).
 */
public final class Supervisor {
  /**
   * The limits the supervisor decides by, from the run's cluster spec.
   *
   * @param numPs the ps tasks of the run
   * @param heartbeatInterval how often the tasks send heartbeats
   * @param roleTimeout how long a role may be silent before it is declared lost
   * @param maxStageAttempts how many times a ps may be lost (and the barrier stage attempted) before the run fails
   * @param attemptsPerLaunch the registration attempts one launch of a ps may use (Spark's retries of its task)
   */
  public record Policy(int numPs, Duration heartbeatInterval, Duration roleTimeout, int maxStageAttempts,
      int attemptsPerLaunch) {}

  /** What the supervisor does to the run's Spark jobs and executors. */
  public interface Actions {
    /** The run's id, for the log. */
    String runId();

    /** How ps {@code index}'s latest task ended (e.g. {@code ""} or {@code " (its cause)"}), or null while it runs. */
    String psEnded(int index);

    /** How many times ps {@code index} was launched. */
    int psLaunches(int index);

    /** Cancels ps {@code index}'s latest launch and launches it again. */
    void relaunchPs(int index);

    /** Asks Spark to kill executor {@code executorId} and start another; whether it could ask. */
    boolean killExecutor(String executorId, String reason);

    /** Kills the Spark task attempts {@code taskIds} (Spark then retries their barrier stage). */
    void killTasks(List<Long> taskIds, String reason);
  }

  private final Actions actions;
  private final Registry registry;
  private final Policy spec;
  private static final Duration MIN_UNREACHABLE_GRACE = Duration.ofMillis(1500);
  private final Set<Integer> killedAttempts = new HashSet<>();
  private static final Logger LOG = LoggerFactory.getLogger(Supervisor.class);

  /** A supervisor of the run whose roles {@code registry} holds, carrying its decisions out through {@code actions}. */
  public Supervisor(Actions actions, Registry registry, Policy spec) {
    this.actions = actions;
    this.registry = registry;
    this.spec = spec;
  }

  /**
   * One look at the roles (called every 100 ms while the barrier stage runs).
   *
   * @throws PsLostTooOftenException when a ps was lost more often than the run allows
   */
  public void check() {
    if (registry.isStopping()) {
      return;
    }
    for (int i = 0; i < spec.numPs(); i++) {
      String ended = actions.psEnded(i);
      if (ended != null) {
        String address = registry.psAddresses().get(i);
        replace(i, null, "its task ended" + ended + (address == null ? "" : " at " + address), false);
      }
    }
    // Three heartbeats, and never under 1.5 s: a loaded executor may miss a short beat or two.
    Duration grace = spec.heartbeatInterval().multipliedBy(3);
    grace = grace.compareTo(MIN_UNREACHABLE_GRACE) < 0 ? MIN_UNREACHABLE_GRACE : grace;
    for (Member m : registry.unreachable(grace)) {
      replace(m.index(), m.address(), "a worker could not reach it and it was silent for " + grace.toMillis()
          + " ms since", true);
    }
    long now = registry.now();
    for (Member m : registry.silent(spec.roleTimeout())) {
      String silence = m.role().name().toLowerCase() + " " + m.index() + " on " + m.host() + " (executor "
          + m.executorId() + ") was silent for " + String.format("%.1f", (now - m.lastSeenNanos()) / 1e9)
          + " s, longer than the role timeout of " + spec.roleTimeout().toMillis() / 1000.0 + " s";
      if (m.role() == io.sparkps.spark.coord.proto.Role.PS) {
        replace(m.index(), m.address(), "it was silent: " + silence, true);
      } else if (killedAttempts.add(m.attempt())) {
        killAttempt(m, silence);
        actions.killExecutor(m.executorId(), "sparkps: " + silence);
      }
    }
  }

  /**
   * Declares ps {@code index} lost, if it still serves at {@code address} (null: wherever it
   * serves), and relaunches it. With {@code killExecutor} (its task did not end: the process is
   * hung, or gone without Spark knowing yet), its executor is killed and replaced through Spark
   * first: a hung process keeps its task slot until Spark's own heartbeat timeout (120 s), and with
   * every slot busy the relaunch would wait for it. A ps registered anew at another address since
   * the supervisor looked (Spark retried its task) is left serving.
   */
  private void replace(int index, String address, String reason, boolean killExecutor) {
    int launches = actions.psLaunches(index);
    Member lost = registry.declarePsLost(index, address, reason, launches * spec.attemptsPerLaunch());
    if (lost != null && killExecutor) {
      actions.killExecutor(lost.executorId(), "sparkps: ps " + index + " was declared lost because " + reason);
    }
    if (lost == null && launches > 0 && actions.psEnded(index) == null) {
      return; // replaced since, or declared lost already and its replacement is on its way
    }
    if (launches > spec.maxStageAttempts()) {
      throw new PsLostTooOftenException(index, launches, "ps " + index + " was lost " + launches
          + " times, more than maxStageAttempts (" + spec.maxStageAttempts() + ") allows; the last time because "
          + reason + ". See its executors' logs");
    }
    registry.retirePsAttemptsBefore(index, launches * spec.attemptsPerLaunch());
    LOG.info("SparkPS run {}: ps {}{} declared lost at worker step {} because {}; relaunching it (launch {})",
        actions.runId(), index, lost == null ? "" : " on " + lost.host() + " (executor " + lost.executorId() + ")",
        registry.maxWorkerStep(), reason, actions.psLaunches(index));
    actions.relaunchPs(index);
  }

  /** Records the silent worker's failure (transient: another attempt may get past it) and kills the attempt's tasks. */
  private void killAttempt(Member silent, String silence) {
    registry.fail(FailureReport.newBuilder().setRole(silent.role()).setIndex(silent.index()).setHost(silent.host())
        .setAttempt(silent.attempt()).setError(WireErrors.toProto(new java.util.concurrent.TimeoutException(silence
            + "; its stage attempt was killed to be retried")))
        .setDeterministic(false).build());
    List<Long> tasks = registry.workerTasks(silent.attempt());
    LOG.info("SparkPS run {}: {}; killing the tasks {} of stage attempt {} so that Spark retries the stage",
        actions.runId(), silence, tasks, silent.attempt());
    actions.killTasks(tasks, "sparkps: " + silence);
  }
}
