package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.coord.proto.HeartbeatRequest;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the coordinator knows of a run: who registered (per role, index and attempt), their
 * latest progress, the failures, and whether the run is stopping. Guarded by itself; waits use
 * its monitor and are always bounded.
 */
public final class Registry {
  /** A role instance's latest state. */
  public record Member(Role role, int index, String host, int port, int attempt, String executorId,
      Progress progress, long lastSeenNanos) {}

  private static final int MAX_HISTORY = 100_000;
  private final int numPs;
  private final int numWorkers;
  private final Map<String, Member> members = new TreeMap<>();
  private final List<FailureReport> failures = new ArrayList<>();
  private final List<Member> history = new ArrayList<>();
  /** The last barrier each worker reached, by stage attempt and worker index. */
  private final Map<Integer, Map<Integer, Integer>> arrivals = new java.util.HashMap<>();
  private boolean stopping;
  private boolean evaluatorStopping;

  /** A registry of a run with {@code numPs} ps tasks and {@code numWorkers} workers. */
  public Registry(int numPs, int numWorkers) {
    this.numPs = numPs;
    this.numWorkers = numWorkers;
  }

  private static String key(Role role, int index) {
    return role + "/" + index;
  }

  synchronized void register(Registration r) {
    members.put(key(r.getRole(), r.getIndex()), new Member(r.getRole(), r.getIndex(), r.getHost(), r.getPort(),
        r.getAttempt(), r.getExecutorId(), Progress.getDefaultInstance(), System.nanoTime()));
    notifyAll();
  }

  synchronized boolean heartbeat(HeartbeatRequest h) {
    Member m = members.get(key(h.getRole(), h.getIndex()));
    if (m != null) {
      Member now = new Member(m.role(), m.index(), m.host(), m.port(), m.attempt(), m.executorId(),
          h.hasProgress() ? h.getProgress() : m.progress(), System.nanoTime());
      members.put(key(h.getRole(), h.getIndex()), now);
      if (h.hasProgress() && !h.getProgress().equals(m.progress()) && history.size() < MAX_HISTORY) {
        history.add(now);
      }
    }
    return stopping || (evaluatorStopping && h.getRole() == Role.EVALUATOR);
  }

  synchronized void fail(FailureReport report) {
    failures.add(report);
    notifyAll();
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

  /**
   * The failure that ends the run now instead of another attempt of the barrier stage: the first
   * worker failure of an attempt (the others of that attempt follow from it: their peer is gone)
   * when it is deterministic or the attempt is the last one allowed; null while another attempt
   * may get past what has failed so far.
   */
  public synchronized FailureReport finalFailure(int maxStageAttempts) {
    java.util.Set<Integer> attempts = new java.util.HashSet<>();
    for (FailureReport f : failures) {
      boolean worker = f.getRole() == io.sparkps.spark.coord.proto.Role.CHIEF
          || f.getRole() == io.sparkps.spark.coord.proto.Role.WORKER;
      if (worker && attempts.add(f.getAttempt())
          && (f.getDeterministic() || f.getAttempt() >= maxStageAttempts - 1)) {
        return f;
      }
    }
    return null;
  }

  /** Failures reported so far, the first first. */
  public synchronized List<FailureReport> failures() {
    return List.copyOf(failures);
  }

  /** Every registered role instance, by role and index. */
  public synchronized List<Member> members() {
    return List.copyOf(members.values());
  }

  /** The addresses of all ps shards in index order, once all registered. */
  public synchronized List<String> psAddresses() {
    List<String> addresses = new ArrayList<>();
    for (int i = 0; i < numPs; i++) {
      Member m = members.get(key(Role.PS, i));
      addresses.add(m == null ? null : m.host() + ":" + m.port());
    }
    return addresses;
  }

  /** The ps indexes not registered yet. */
  public synchronized List<Integer> missingPs() {
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < numPs; i++) {
      if (!members.containsKey(key(Role.PS, i))) {
        missing.add(i);
      }
    }
    return missing;
  }

  /** Worker indexes that have not registered for {@code attempt}. */
  synchronized List<Integer> missingWorkers(int attempt) {
    TreeSet<Integer> missing = new TreeSet<>();
    for (int i = 0; i < numWorkers; i++) {
      Member m = members.get(key(i == 0 ? Role.CHIEF : Role.WORKER, i));
      if (m == null || m.attempt() != attempt) {
        missing.add(i);
      }
    }
    return List.copyOf(missing);
  }

  /**
   * Waits until every ps registered, a failure arrived, the run stops, or the timeout passes.
   * Returns the missing ps indexes (empty when all are there).
   */
  public synchronized List<Integer> awaitPs(long timeoutMillis) throws InterruptedException {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    while (!missingPs().isEmpty() && failures.isEmpty() && !stopping) {
      long left = (deadline - System.nanoTime()) / 1_000_000L;
      if (left <= 0) {
        break;
      }
      wait(Math.min(left, 200));
    }
    return missingPs();
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
      arrivals.computeIfAbsent(attempt, a -> new java.util.HashMap<>()).merge(index, phase, Math::max);
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
    if (phase == 0) {
      return missingWorkers(attempt);
    }
    Map<Integer, Integer> reached = arrivals.getOrDefault(attempt, Map.of());
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < numWorkers; i++) {
      if (reached.getOrDefault(i, 0) < phase) {
        missing.add(i);
      }
    }
    return missing;
  }

  /** Every change of progress reported so far (at most 100,000), oldest first. */
  public synchronized List<Member> history() {
    return List.copyOf(history);
  }

  /** The changes of progress from position {@code from} of the history on. */
  public synchronized List<Member> historySince(int from) {
    return from >= history.size() ? List.of() : List.copyOf(history.subList(from, history.size()));
  }

  /** The first worker failure reported for stage attempt {@code attempt}, or null. */
  synchronized FailureReport failedWorker(int attempt) {
    for (FailureReport f : failures) {
      if ((f.getRole() == Role.CHIEF || f.getRole() == Role.WORKER) && f.getAttempt() == attempt) {
        return f;
      }
    }
    return null;
  }

  /** Latest progress of each worker, by index. */
  public synchronized Map<Integer, Progress> workerProgress() {
    Map<Integer, Progress> out = new LinkedHashMap<>();
    for (Member m : members.values()) {
      if (m.role() == Role.CHIEF || m.role() == Role.WORKER) {
        out.put(m.index(), m.progress());
      }
    }
    return out;
  }
}
