package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.coord.proto.HeartbeatRequest;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the coordinator knows of a run: who registered (per role, index and attempt), their
 * latest progress, the failures, and whether the run is stopping. Guarded by itself; waits use
 * its monitor and are always bounded.
 */
public final class Registry {
  private static final Logger LOG = LoggerFactory.getLogger(Registry.class);
  private final int numPs;
  private final int numWorkers;
  private final Roster roster;
  private final FailureLog failures = new FailureLog();
  private final BarrierArrivals arrivals = new BarrierArrivals();
  private final PsLosses losses = new PsLosses();
  /** The ps the chief of each retried stage attempt asked to be refilled from kept copies, by its attempt. */
  private final Map<Integer, java.util.Set<Integer>> refillRequests = new java.util.HashMap<>();
  private boolean stopping;
  private boolean evaluatorStopping;
  private long heartbeatNanos = 1_000_000_000L;
  /** Records each task could not keep while the driver was unreachable, by role/index. */
  private final Map<String, Long> droppedRecords = new java.util.HashMap<>();
  /** Each role instance's latest registration (role and index as the key), in the order they first came. */
  private final Map<String, Registration> registrations = new java.util.LinkedHashMap<>();

  /** When members were last heard from and losses happened, in nanoseconds (waits use real time). */
  private final java.util.function.LongSupplier clock;

  /** A registry of a run with {@code numPs} ps tasks and {@code numWorkers} workers. */
  public Registry(int numPs, int numWorkers) {
    this(numPs, numWorkers, System::nanoTime);
  }

  /** As above, on {@code clock} (nanoseconds): tests move time by hand. */
  public Registry(int numPs, int numWorkers, java.util.function.LongSupplier clock) {
    this.numPs = numPs;
    this.numWorkers = numWorkers;
    this.clock = clock;
    this.roster = new Roster(numPs, numWorkers);
  }

  /** The registry's clock, in nanoseconds. */
  public long now() {
    return clock.getAsLong();
  }

  /**
   * Calls the coordinator serves at once: each task's longest wait (a worker's barrier and one
   * wait per ps it recovers, a ps's or the evaluator's registration, an executor's wait to refill
   * from the copy it keeps), and a few besides.
   */
  int maxConcurrentCalls() {
    return 8 + numWorkers * (numPs + 3) + numPs + 2;
  }

  /** The interval at which roles send heartbeats (how long a ps must be heard from again to count as serving). */
  public synchronized void setHeartbeatInterval(java.time.Duration interval) {
    heartbeatNanos = interval.toNanos();
  }

  /** Records a registration; refuses one for a slot the run lacks or a live slot another task holds ({@link Slots}). */
  synchronized void register(Registration r) {
    Slots.checkExists(r, numPs, numWorkers);
    if (r.getRole() == Role.PS) {
      Slots.checkCurrentLaunch(r, losses.firstAttempt(r.getIndex()));
    }
    Member old = roster.get(r.getRole(), r.getIndex());
    Slots.checkFree(r, old, old != null && losses.isLost(r.getIndex(), old.address()));
    Member m = new Member(r.getRole(), r.getIndex(), r.getHost(), r.getPort(), r.getAttempt(), r.getExecutorId(),
        Progress.getDefaultInstance(), clock.getAsLong(), r.getTaskId(), r.getPid(), false);
    if (r.getRole() == Role.PS && old != null && !old.address().equals(m.address()) && !stopping) {
      // (Once the run stops, a late registration is no recovery: the task is told to stop.)
      // A replacement: one the supervisor launched, or Spark's own retry of the task before the loss was noticed.
      declarePsLost(r.getIndex(), "its task failed and Spark retried it (attempt " + r.getAttempt() + ")", maxWorkerStep());
      losses.replaced(r.getIndex(), m.address());
    }
    logRegistration(r, m.address());
    registrations.put(r.getRole() + "#" + r.getIndex(), r);
    roster.put(m);
    notifyAll();
  }

  /** Each role instance's latest registration (where it runs, what Spark gave its task), in the order they came. */
  public synchronized List<Registration> registrations() {
    return List.copyOf(registrations.values());
  }

  /** ", 2 cores, gpu [0]": what Spark gave a registering task, or "" when it did not say. */
  private static String held(Registration r) {
    if (r.getCpus() == 0) {
      return "";
    }
    StringBuilder b = new StringBuilder(", ").append(r.getCpus()).append(r.getCpus() == 1 ? " core" : " cores");
    r.getResourcesList().forEach(h -> b.append(", ").append(h.getName()).append(' ').append(h.getAddressesList()));
    return b.toString();
  }

  private void logRegistration(Registration r, String address) {
    boolean worker = r.getRole() == Role.CHIEF || r.getRole() == Role.WORKER;
    int before = roster.currentAttempt();
    if (worker && before >= 0 && r.getAttempt() > before) {
      FailureReport cause = failedWorker(before);
      LOG.info("SparkPS: the barrier stage runs again (attempt {}, {} {} registered on {}); attempt {} ended because {}",
          r.getAttempt(), r.getRole().name().toLowerCase(), r.getIndex(), r.getHost(), before, cause == null
              ? "of a failure Spark saw (an executor lost?)" : cause.getRole().name().toLowerCase() + " "
                  + cause.getIndex() + " on " + cause.getHost() + " failed: " + firstLine(cause.getError().getMessage()));
    }
    if (r.getRole() == Role.PS) {
      LOG.info("SparkPS: ps {} serves at {} (executor {}, task attempt {}{})", r.getIndex(), address,
          r.getExecutorId(), r.getAttempt(), held(r));
    } else {
      LOG.info("SparkPS: {} {} registered on {} (executor {}, {} attempt {}{})", r.getRole().name().toLowerCase(),
          r.getIndex(), r.getHost(), r.getExecutorId(), worker ? "stage" : "task", r.getAttempt(), held(r));
    }
  }

  private static String firstLine(String s) {
    return s == null ? "" : s.lines().findFirst().orElse("");
  }

  /**
   * Refuses ps {@code index}'s registrations from attempts before {@code firstAttempt}: the driver
   * relaunched it, and a late retry of a cancelled launch must not take the slot from the relaunch.
   */
  public synchronized void retirePsAttemptsBefore(int index, int firstAttempt) {
    losses.retireAttemptsBefore(index, firstAttempt);
  }

  /**
   * The supervisor's declaration, in one step under this registry's lock: ps {@code index} is
   * declared lost because {@code reason} if it still serves at {@code address} (null: wherever it
   * serves), and its registrations from attempts before {@code firstAttempt} are refused from then
   * on (the relaunch's). A registration that came after the supervisor looked, such as Spark's own
   * retry of the lost task, is therefore neither declared lost for what its predecessor did nor
   * left to register after the relaunch was decided. Returns the registration declared lost, or
   * null when there was none to declare (gone, replaced since, or declared lost already).
   */
  public synchronized Member declarePsLost(int index, String address, String reason, int firstAttempt) {
    Member m = roster.ps(index);
    if (m == null || (address != null && !address.equals(m.address())) || !declarePsLost(index, reason,
        maxWorkerStep())) {
      return null;
    }
    losses.retireAttemptsBefore(index, firstAttempt);
    return m;
  }

  /**
   * Declares ps {@code index} lost at its current address (once): clients are told to fail their
   * calls there, and its loss is recorded. Returns false when it was declared lost already.
   */
  public synchronized boolean declarePsLost(int index, String reason, long atStep) {
    Member m = roster.ps(index);
    if (m == null || !losses.declare(index, m.address(), reason, atStep, clock.getAsLong())) {
      return false;
    }
    notifyAll();
    return true;
  }

  /** Ps addresses declared lost, as index and address. */
  public synchronized List<PsLoss> losses() {
    return losses.all();
  }

  /** Records that worker {@code worker} refilled the replacement of ps {@code index} from {@code source}. */
  synchronized void recovered(int index, int worker, long step, String source) {
    Member now = roster.ps(index);
    if (losses.recovered(index, now == null ? null : now.address(), step, source, clock.getAsLong())) {
      LOG.info("SparkPS: ps {}{} refilled at step {} by worker {} from {}", index,
          now == null ? "" : " at " + now.address(), step, worker, source);
    }
  }

  /**
   * The chief of stage attempt {@code attempt} asks the executors keeping workers' copies of attempt
   * {@code attempt - 1} to refill {@code shards} (lost with that attempt, see {@link #awaitRefill}).
   */
  synchronized void requestRefill(int attempt, java.util.Collection<Integer> shards) {
    refillRequests.computeIfAbsent(attempt, a -> new java.util.TreeSet<>()).addAll(shards);
    LOG.info("SparkPS: the chief of stage attempt {} asks for ps {} to be refilled from copies kept since attempt {}",
        attempt, shards, attempt - 1);
    notifyAll();
  }

  /** What an executor keeping a copy is told: the ps to refill, or to release the copy. */
  public record RefillOrder(List<Integer> shards, boolean release) {}

  /**
   * Waits, at most {@code timeoutMillis}, until the chief of the stage attempt after {@code attempt}
   * asks for ps to be refilled, and returns them; tells the copy's keeper to release it once it can
   * no longer be wanted: the run stops, or an attempt later than the next one has registered (the
   * next attempt trained past the copy).
   */
  synchronized RefillOrder awaitRefill(int attempt, long timeoutMillis) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (true) {
      if (stopping || roster.currentAttempt() > attempt + 1) {
        return new RefillOrder(List.of(), true);
      }
      java.util.Set<Integer> asked = refillRequests.get(attempt + 1);
      if (asked != null) {
        return new RefillOrder(List.copyOf(asked), false);
      }
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        return new RefillOrder(List.of(), false);
      }
      wait(Math.min(left, 200));
    }
  }

  /**
   * Waits until ps {@code index} serves somewhere other than {@code lost}, and returns where; returns
   * "" when it is heard from at {@code lost} a whole heartbeat after the question (it still serves
   * there) and null when the timeout passes first.
   */
  synchronized String awaitPs(int index, String lost, long timeoutMillis, java.util.function.BooleanSupplier cancelled)
      throws InterruptedException {
    if (index < 0 || index >= numPs) {
      throw new IllegalArgumentException("no ps " + index + " in this run (" + numPs + " ps)");
    }
    long asked = clock.getAsLong();
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    Member asking = roster.ps(index);
    if (asking != null && asking.address().equals(lost)) {
      losses.suspect(index, asked);
    }
    while (!stopping && !cancelled.getAsBoolean()) {
      Member m = roster.ps(index);
      if (m != null && !m.address().equals(lost)) {
        return m.address();
      }
      if (m != null && !losses.isLost(index, lost) && m.lastSeenNanos() > asked + heartbeatNanos) {
        return "";
      }
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        break;
      }
      wait(Math.min(left, 200));
    }
    return null;
  }

  /**
   * Ps that a client found unreachable and that have not been heard from since, for longer than
   * {@code grace} (a few heartbeats): a killed process is lost at once, not after the role timeout.
   */
  public synchronized List<Member> unreachable(java.time.Duration grace) {
    return losses.unreachable(grace.toNanos(), roster::ps, clock.getAsLong());
  }

  /** The furthest step any worker reported. */
  public synchronized long maxWorkerStep() {
    return roster.maxWorkerStep();
  }

  /** The latest stage attempt any worker registered with, or -1. */
  public synchronized int currentAttempt() {
    return roster.currentAttempt();
  }

  /**
   * Role instances silent for longer than {@code timeout}: ps tasks not declared lost yet, and the
   * workers of the current stage attempt that have not finished. (The evaluator never holds up training.)
   */
  public synchronized List<Member> silent(java.time.Duration timeout) {
    long now = clock.getAsLong();
    int attempt = roster.currentAttempt();
    List<Member> out = new ArrayList<>();
    for (Member m : roster.all()) {
      boolean watched = m.role() == Role.PS ? !losses.isLost(m.index(), m.address())
          : (m.role() == Role.CHIEF || m.role() == Role.WORKER) && m.attempt() == attempt && !m.finished();
      if (watched && now - m.lastSeenNanos() > timeout.toNanos()) {
        out.add(m);
      }
    }
    return out;
  }

  synchronized io.sparkps.spark.coord.proto.HeartbeatReply heartbeat(HeartbeatRequest h) {
    Member m = roster.get(h.getRole(), h.getIndex());
    // Only the registered attempt's beats count: a task's heartbeats start before it registers, and
    // a ps relaunched (or retried by Spark) must not make the lost one it replaces look alive.
    if (m != null && m.attempt() == h.getAttempt()) {
      roster.beat(m, m.seen(h.hasProgress() ? h.getProgress() : m.progress(), h.getFinished(), clock.getAsLong()),
          h.getRecordsList());
      if (h.getDroppedRecords() > 0) {
        droppedRecords.put(m.role() + "/" + m.index(), h.getDroppedRecords());
      }
      if (m.role() == Role.PS) {
        notifyAll(); // awaitPs learns that a ps still serves
      }
    }
    io.sparkps.spark.coord.proto.HeartbeatReply.Builder reply = io.sparkps.spark.coord.proto.HeartbeatReply.newBuilder()
        .setStop(stopping || (evaluatorStopping && h.getRole() == Role.EVALUATOR));
    losses.all().forEach(l -> reply.addLostPs(io.sparkps.spark.coord.proto.LostPs.newBuilder().setIndex(l.shard())
        .setAddress(l.lostAddress())));
    return reply.build();
  }

  /** Records a failure: a task's report, or one the driver found (a silent worker). */
  public synchronized void fail(FailureReport report) {
    LOG.info("SparkPS: {} {} on {} (attempt {}) failed: {}", report.getRole().name().toLowerCase(), report.getIndex(),
        report.getHost(), report.getAttempt(), firstLine(report.getError().getMessage()));
    failures.add(report);
    notifyAll();
  }

  /** The Spark task ids of the workers registered for stage attempt {@code attempt}. */
  public synchronized List<Long> workerTasks(int attempt) {
    return roster.workerTasks(attempt);
  }

  /** Tells the evaluator (only) to finish: training is over, the ps tasks keep serving its last reads. */
  public synchronized void stopEvaluator() {
    evaluatorStopping = true;
  }

  /** Tells long-running roles to stop at their next heartbeat, and wakes every wait. */
  public synchronized void stop() {
    stopping = true;
    notifyAll();
  }

  /** Whether the run is stopping. */
  public synchronized boolean isStopping() {
    return stopping;
  }

  /** The failure that ends the run now instead of another attempt of the barrier stage ({@link FailureLog#finalFailure}). */
  public synchronized FailureReport finalFailure(int maxStageAttempts) {
    return failures.finalFailure(maxStageAttempts);
  }

  /** Failures reported so far, the first first. */
  public synchronized List<FailureReport> failures() {
    return failures.all();
  }

  /** Every registered role instance, by role and index. */
  public synchronized List<Member> members() {
    return roster.all();
  }

  /** The addresses of all ps shards in index order, once all registered. */
  public synchronized List<String> psAddresses() {
    return roster.psAddresses();
  }

  /** The ps indexes not registered yet. */
  public synchronized List<Integer> missingPs() {
    return roster.missingPs();
  }

  /** Worker indexes that have not registered for {@code attempt}. */
  synchronized List<Integer> missingWorkers(int attempt) {
    return roster.missingWorkers(attempt);
  }

  /**
   * Waits until every ps registered, a failure arrived, the run stops, or the timeout passes.
   * Returns the missing ps indexes (empty when all are there).
   */
  public synchronized List<Integer> awaitPs(long timeoutMillis) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (!roster.missingPs().isEmpty() && failures.isEmpty() && !stopping) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        break;
      }
      wait(Math.min(left, 200));
    }
    return roster.missingPs();
  }

  /** Waits (bounded) until all workers registered for {@code attempt}; returns the missing ones. */
  synchronized List<Integer> awaitWorkers(int attempt, long timeoutMillis, java.util.function.BooleanSupplier cancelled)
      throws InterruptedException {
    return awaitWorkers(attempt, 0, -1, timeoutMillis, cancelled);
  }

  /**
   * Phase 0: waits until every worker of {@code attempt} has registered. Phase n &gt; 0: worker
   * {@code index} arrives at barrier n, then waits until every worker of the attempt has. Returns
   * the workers still missing (none on success), early when the run stops, the caller is gone or a
   * worker of the attempt failed.
   */
  synchronized List<Integer> awaitWorkers(int attempt, int phase, int index, long timeoutMillis,
      java.util.function.BooleanSupplier cancelled) throws InterruptedException {
    if (phase > 0) {
      if (index < 0 || index >= numWorkers) {
        throw new IllegalArgumentException("no worker " + index + " in this run (" + numWorkers + " workers)");
      }
      arrivals.arrive(attempt, index, phase);
      notifyAll();
    }
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (!missingWorkers(attempt, phase).isEmpty() && !stopping && !cancelled.getAsBoolean()
        && failedWorker(attempt) == null) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        break;
      }
      wait(Math.min(left, 200));
    }
    return missingWorkers(attempt, phase);
  }

  private List<Integer> missingWorkers(int attempt, int phase) {
    return phase == 0 ? roster.missingWorkers(attempt) : arrivals.missing(attempt, phase, numWorkers);
  }

  /**
   * Every record of progress the history holds, oldest first: each worker's steps at the run's
   * metrics interval (its older half thinned past {@link Roster#MAX_HISTORY} records), the
   * evaluator's reports, and status lines.
   */
  public synchronized List<Member> history() {
    return roster.history();
  }

  /** The records numbered {@code from} and later, with their numbers (a live reader's next batch). */
  public synchronized List<History.Entry> historySince(long from) {
    return roster.historySince(from);
  }

  /** Worker steps the driver does not hold: thinned from the history, or dropped by tasks that could not reach it. */
  public synchronized long recordsNotKept() {
    return roster.thinned() + droppedRecords.values().stream().mapToLong(Long::longValue).sum();
  }

  /** The first worker failure reported for stage attempt {@code attempt}, or null. */
  public synchronized FailureReport firstWorkerFailure(int attempt) {
    return failures.firstOfWorkers(attempt);
  }

  /** The first worker failure reported for stage attempt {@code attempt}, or null. */
  synchronized FailureReport failedWorker(int attempt) {
    return failures.firstOfWorkers(attempt);
  }

  /** Latest progress of each worker, by index. */
  public synchronized Map<Integer, Progress> workerProgress() {
    return roster.workerProgress();
  }
}
