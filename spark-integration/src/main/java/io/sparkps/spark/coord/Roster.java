package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Role;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Who a run's roles are: the registered instance of each role and index, with its latest progress,
 * and the history of progress changes. Not thread-safe: the {@link Registry}'s monitor guards it,
 * and the registry decides what a registration or a heartbeat means.
 */
final class Roster {
  /** Records the history holds at most (a few hundred bytes each) before it thins its older half. */
  static final int MAX_HISTORY = 200_000;
  private final int numPs;
  private final int numWorkers;
  private final Map<String, Member> members = new TreeMap<>();
  private final History history = new History(MAX_HISTORY);

  Roster(int numPs, int numWorkers) {
    this.numPs = numPs;
    this.numWorkers = numWorkers;
  }

  private static String key(Role role, int index) {
    return role + "/" + index;
  }

  /** The instance registered for {@code role} and {@code index}, or null. */
  Member get(Role role, int index) {
    return members.get(key(role, index));
  }

  /** The instance of ps {@code index}, or null. */
  Member ps(int index) {
    return get(Role.PS, index);
  }

  /** Takes {@code m} as its slot's instance (a registration). */
  void put(Member m) {
    members.put(key(m.role(), m.index()), m);
  }

  /**
   * Takes {@code now} as its slot's instance (a heartbeat). Its {@code records} (the task's reports
   * since its last beat) join the history, then its latest progress when its message changed (a
   * worker's status line) or, for a ps, when anything changed (a ps records nothing itself).
   */
  void beat(Member before, Member now, List<Progress> records) {
    put(now);
    Progress last = before.progress();
    for (Progress p : records) {
      // each record is a report of its own (the latest of an earlier beat may be one of them)
      history.add(now.with(p));
      last = p;
    }
    boolean changed = now.role() == Role.PS ? !now.progress().equals(last)
        : !now.progress().getMessage().equals(last.getMessage());
    if (changed) {
      // a status line: its metrics are the last recorded step's, not a new record of them
      history.add(now.role() == Role.PS ? now : now.with(now.progress().toBuilder().clearMetrics().build()));
    }
  }

  /** The chief and the workers, of every attempt registered. */
  Stream<Member> workers() {
    return members.values().stream().filter(m -> m.role() == Role.CHIEF || m.role() == Role.WORKER);
  }

  /** Every instance, by role and index. */
  List<Member> all() {
    return List.copyOf(members.values());
  }

  /** The furthest step any worker reported. */
  long maxWorkerStep() {
    return workers().mapToLong(m -> m.progress().getStep()).max().orElse(0);
  }

  /** The latest stage attempt any worker registered with, or -1. */
  int currentAttempt() {
    return workers().mapToInt(Member::attempt).max().orElse(-1);
  }

  /** The addresses of all ps shards in index order (null for one not registered). */
  List<String> psAddresses() {
    List<String> addresses = new ArrayList<>();
    for (int i = 0; i < numPs; i++) {
      Member m = ps(i);
      addresses.add(m == null ? null : m.address());
    }
    return addresses;
  }

  /** The ps indexes not registered yet. */
  List<Integer> missingPs() {
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < numPs; i++) {
      if (ps(i) == null) {
        missing.add(i);
      }
    }
    return missing;
  }

  /** Worker indexes (in order) that have not registered for {@code attempt}. */
  List<Integer> missingWorkers(int attempt) {
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < numWorkers; i++) {
      Member m = get(i == 0 ? Role.CHIEF : Role.WORKER, i);
      if (m == null || m.attempt() != attempt) {
        missing.add(i);
      }
    }
    return missing;
  }

  /** The Spark task ids of the workers registered for stage attempt {@code attempt}. */
  List<Long> workerTasks(int attempt) {
    return workers().filter(m -> m.attempt() == attempt && m.taskId() >= 0).map(Member::taskId).toList();
  }

  /** Latest progress of each worker, by index. */
  Map<Integer, Progress> workerProgress() {
    Map<Integer, Progress> out = new LinkedHashMap<>();
    workers().forEach(m -> out.put(m.index(), m.progress()));
    return out;
  }

  /** The records of the history numbered {@code from} and later, with their numbers. */
  List<History.Entry> historySince(long from) {
    return history.since(from);
  }

  /** Every record of the history still held, oldest first. */
  List<Member> history() {
    return history.all();
  }

  /** Worker steps the history dropped to stay within its bounds. */
  long thinned() {
    return history.thinned();
  }
}
