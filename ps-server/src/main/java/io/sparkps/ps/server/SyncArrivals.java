package io.sparkps.ps.server;

import io.sparkps.ps.wire.PsError;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The SYNC step of a variable slice or an embedding table on one shard: whose gradients of the
 * current step have arrived. Both follow one rule: a push of a step already complete, or a
 * second push of the current step by the same worker, is a retry and is taken once; a push of a
 * later step is refused (a worker pulls step n before it pushes it, and that pull waited for step
 * n - 1); when the last of the group's workers arrives, the caller applies the step's mean and
 * the next step begins. What is summed meanwhile is the caller's (a slice's values, a table's rows
 * by id). Not thread-safe: guarded by the owner's lock.
 */
final class SyncArrivals {
  private final BitSet arrived = new BitSet();

  /** Whether a push of step {@code at} by {@code worker}, the owner being at {@code step}, was taken before. */
  boolean isRepeat(int worker, long at, long step) {
    return at < step || at == step && arrived.get(worker);
  }

  /** Whether {@code worker}'s push of the current step has arrived. */
  boolean has(int worker) {
    return arrived.get(worker);
  }

  /** Counts {@code worker}'s push of the current step; whether it was the last of {@code workers}. */
  boolean arrive(int worker, int workers) {
    arrived.set(worker);
    return arrived.cardinality() >= workers;
  }

  /** Forgets the step's arrivals: it completed, or the owner moved to another step. */
  void clear() {
    arrived.clear();
  }

  /** The workers of {@code workers} whose push of the current step is missing. */
  List<Integer> missing(int workers) {
    List<Integer> missing = new ArrayList<>();
    for (int w = arrived.nextClearBit(0); w < workers; w = arrived.nextClearBit(w + 1)) {
      missing.add(w);
    }
    return missing;
  }

  /** A worker index outside its group, refused. */
  static PsError outsideGroup(String where, int worker, String group, int workers) {
    return PsError.invalid(where + ": worker " + worker + " is outside group '" + group + "' of " + workers
        + " workers (field worker)");
  }

  /** A push of {@code pushed} for step {@code at} that the {@code owner} (at {@code step}) has not reached, refused. */
  static PsError ahead(String where, int worker, String pushed, long at, String owner, long step) {
    return PsError.precondition(where + ": worker " + worker + " pushed " + pushed + " for SYNC step " + at
        + " but the " + owner + " is at step " + step + " (pull before each push: a push of step n needs step n - 1 "
        + "complete)");
  }
}
