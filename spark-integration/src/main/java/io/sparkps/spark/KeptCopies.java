package io.sparkps.spark;

import io.grpc.StatusRuntimeException;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.client.LastCopy;
import io.sparkps.spark.coord.CoordinatorClient;
import io.sparkps.spark.coord.proto.AwaitRefillReply;
import io.sparkps.spark.recovery.CoordinatorRecovery;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The executor's keeper of workers' last copies: when a worker task ends early (its stage attempt
 * failed, often because another executor died with a worker and a ps), its client's copy of the
 * shards it pulled ({@link GrpcPsClient#lastCopy()}) stays here, keyed by run, instead of dying with
 * the task. If the chief of the next attempt finds ps whose state was lost, it asks the
 * coordinator for them to be refilled; each keeper of a copy of the attempt before, on whichever
 * executor it is, refills them in memory before anyone trains (the first refill wins). This does
 * not depend on where Spark places the next attempt's workers.
 *
 * <p>Bounded: one copy per run on an executor (a newer one replaces it), released when it has been
 * used, when the run stops or a later attempt than the next one runs (the copy is then older than
 * what the servers hold), when the driver cannot be reached {@link #MISSES} times in a row (the
 * run is gone), and by the driver itself at the end of the run when the executor is in its JVM
 * (local mode). The copy refers to the dead task's parameter arrays: one set of the network's
 * parameters. One daemon thread per kept copy waits on the coordinator (a long poll).
 */
final class KeptCopies {
  private static final Logger LOG = LoggerFactory.getLogger(KeptCopies.class);
  /** One wait on the coordinator; the keeper asks again after it. */
  static final Duration POLL = Duration.ofSeconds(5);
  /** Failed waits in a row after which the run is taken for gone and its copy released. */
  static final int MISSES = 3;
  private static final Map<String, Kept> KEPT = new ConcurrentHashMap<>();

  private KeptCopies() {}

  /** A copy kept for run {@code run}: taken when stage attempt {@code attempt} ended early. */
  private static final class Kept implements Runnable {
    final String run;
    final int attempt;
    final LastCopy copy;
    final TaskEnv env;
    /** The executor keeping it ("driver" in local mode), for the refill's record. */
    final String executor;
    volatile boolean released;

    Kept(String run, int attempt, LastCopy copy, TaskEnv env, String executor) {
      this.executor = executor;
      this.run = run;
      this.attempt = attempt;
      this.copy = copy;
      this.env = env;
    }

    @Override
    public void run() {
      int misses = 0;
      try (CoordinatorClient coordinator = env.coordinatorClient()) {
        while (!released) {
          AwaitRefillReply order;
          try {
            order = coordinator.awaitRefill(attempt, POLL);
            misses = 0;
          } catch (StatusRuntimeException e) {
            if (++misses >= MISSES) {
              LOG.info("SparkPS run {}: the driver did not answer {} times in a row ({}): the copy kept since stage "
                  + "attempt {} is released", run, MISSES, e.getStatus().getCode(), attempt);
              return;
            }
            sleep(POLL);
            continue;
          }
          if (order.getRelease()) {
            return;
          }
          if (order.getShardsCount() > 0) {
            refill(coordinator, order);
            return;
          }
        }
      } catch (RuntimeException e) {
        LOG.warn("SparkPS run {}: the copy kept since stage attempt {} could not refill the lost ps: {}", run, attempt,
            e.toString());
      } finally {
        release(run, this);
      }
    }

    private void refill(CoordinatorClient coordinator, AwaitRefillReply order) {
      List<String> addresses = order.getPsAddressesList().isEmpty() ? env.psAddresses() : order.getPsAddressesList();
      ClusterSpec spec = env.spec();
      CoordinatorRecovery recovery = new CoordinatorRecovery(coordinator, copy.worker(),
          spec.roleTimeout().plus(spec.psStartTimeout()), true, attempt);
      try (PsClient ps = env.psClientBuilder(addresses).optWorker(copy.worker()).optCallTimeout(spec.callTimeout())
          .optWaitTimeout(spec.syncWaitTimeout()).optRecovery(recovery).build()) {
        String where = " kept by executor " + executor + " since stage attempt " + attempt + " ended";
        List<Integer> refilled = GrpcPsClient.of(ps).refillLost(copy, where);
        LOG.info("SparkPS run {}: asked to refill ps {}; {} from {}{}", run, order.getShardsList(),
            refilled.isEmpty() ? "none needed it (refilled already)" : "refilled ps " + refilled, copy, where);
      }
    }
  }

  /**
   * Keeps {@code ps}'s last copy for run {@code run}, whose stage attempt {@code attempt} this task
   * ran and which ended early; nothing when the client holds no copy. Never throws: the task's own
   * failure is what it reports.
   */
  static void keep(String run, int attempt, PsClient ps, TaskEnv env) {
    try {
      LastCopy copy = GrpcPsClient.of(ps).lastCopy();
      if (copy == null) {
        return;
      }
      org.apache.spark.SparkEnv spark = org.apache.spark.SparkEnv.get();
      Kept kept = new Kept(run, attempt, copy, env, spark == null ? "(none: no Spark here)" : spark.executorId());
      Kept old = KEPT.get(run);
      if (old != null && (old.attempt > attempt || (old.attempt == attempt
          && old.copy.newestStep() >= copy.newestStep()))) {
        return; // one copy per run: the newer stays
      }
      KEPT.put(run, kept);
      if (old != null) {
        old.released = true;
      }
      Thread t = new Thread(kept, "sparkps-kept-copy-" + run);
      t.setDaemon(true);
      t.start();
      LOG.info("SparkPS run {}: keeps {} after stage attempt {} ended", run, copy, attempt);
    } catch (RuntimeException e) {
      LOG.warn("SparkPS run {}: could not keep a worker's copy after stage attempt {}: {}", run, attempt, e.toString());
    }
  }

  /** Releases run {@code run}'s copy on this executor, if it keeps one (the run ended). */
  static void release(String run) {
    Kept k = KEPT.remove(run);
    if (k != null) {
      k.released = true;
    }
  }

  private static void release(String run, Kept kept) {
    kept.released = true;
    KEPT.remove(run, kept);
  }

  /** The copy this executor keeps for run {@code run}, or null. */
  static LastCopy kept(String run) {
    Kept k = KEPT.get(run);
    return k == null ? null : k.copy;
  }

  private static void sleep(Duration d) {
    try {
      Thread.sleep(d.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
