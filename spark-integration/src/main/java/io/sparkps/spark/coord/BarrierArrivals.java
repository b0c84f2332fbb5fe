package io.sparkps.spark.coord;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Which barrier each worker of a stage attempt has reached. Not thread-safe: guarded by the
 * {@link Registry} that holds it (as {@link PsLosses} and {@link FailureLog} are), whose monitor
 * the waiting workers wait on.
 */
final class BarrierArrivals {
  /** Per stage attempt, the highest barrier each worker index reached. */
  private final Map<Integer, Map<Integer, Integer>> arrivals = new HashMap<>();

  /** Worker {@code index} of {@code attempt} reached barrier {@code phase}; older attempts are forgotten. */
  void arrive(int attempt, int index, int phase) {
    arrivals.computeIfAbsent(attempt, a -> new HashMap<>()).merge(index, phase, Math::max);
    arrivals.keySet().removeIf(a -> a < attempt - 2); // only the latest attempts still meet at barriers
  }

  /** The worker indexes (of {@code numWorkers}) of {@code attempt} that have not reached barrier {@code phase}. */
  List<Integer> missing(int attempt, int phase, int numWorkers) {
    Map<Integer, Integer> reached = arrivals.getOrDefault(attempt, Map.of());
    List<Integer> missing = new ArrayList<>();
    for (int i = 0; i < numWorkers; i++) {
      if (reached.getOrDefault(i, 0) < phase) {
        missing.add(i);
      }
    }
    return missing;
  }
}
