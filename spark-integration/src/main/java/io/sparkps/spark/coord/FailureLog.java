package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.FailureReport;
import io.sparkps.spark.coord.proto.Role;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The failures a run's tasks reported (and those the driver found), oldest first, at most
 * {@value #MAX_FAILURES}, and what they decide. Not thread-safe: {@link Registry} guards it.
 */
final class FailureLog {
  private static final int MAX_FAILURES = 1000;
  private final List<FailureReport> failures = new ArrayList<>();

  void add(FailureReport report) {
    if (failures.size() >= MAX_FAILURES) {
      failures.remove(0); // the latest attempts' failures are the ones that decide
    }
    failures.add(report);
  }

  List<FailureReport> all() {
    return List.copyOf(failures);
  }

  boolean isEmpty() {
    return failures.isEmpty();
  }

  /**
   * The failure that ends the run now instead of another attempt of the barrier stage: the first
   * worker failure of an attempt (the others of that attempt follow from it: their peer is gone)
   * when it is deterministic or the attempt is the last one allowed; null while another attempt
   * may get past what has failed so far.
   */
  FailureReport finalFailure(int maxStageAttempts) {
    Set<Integer> attempts = new HashSet<>();
    for (FailureReport f : failures) {
      if (isWorker(f) && attempts.add(f.getAttempt())
          && (f.getDeterministic() || f.getAttempt() >= maxStageAttempts - 1)) {
        return f;
      }
    }
    return null;
  }

  /** The first worker failure reported for stage attempt {@code attempt}, or null. */
  FailureReport firstOfWorkers(int attempt) {
    return failures.stream().filter(f -> isWorker(f) && f.getAttempt() == attempt).findFirst().orElse(null);
  }

  private static boolean isWorker(FailureReport f) {
    return f.getRole() == Role.CHIEF || f.getRole() == Role.WORKER;
  }
}
