package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.GroupSpec;
import java.util.ArrayList;
import java.util.List;

/** A consistency group on one shard: its spec and, for SSP, each worker's clock. Guarded by itself. */
final class GroupState {
  final GroupSpec spec;
  private final long[] clocks;

  GroupState(GroupSpec spec) {
    this.spec = spec;
    this.clocks = new long[Math.max(0, spec.getNumWorkers())];
  }

  ConsistencyMode mode() {
    return spec.getMode();
  }

  /** Records that {@code worker} finished step {@code step}. */
  synchronized void advance(int worker, long step) {
    clocks[worker] = Math.max(clocks[worker], step + 1);
  }

  /** For SSP: null when a worker at {@code clock} may read, else who it waits for. */
  synchronized String sspBlocker(int worker, long clock) {
    long needed = clock - spec.getStaleness();
    List<Integer> slow = new ArrayList<>();
    for (int w = 0; w < clocks.length; w++) {
      if (clocks[w] < needed) {
        slow.add(w);
      }
    }
    return slow.isEmpty() ? null : "SSP group '" + spec.getName() + "' (staleness "
        + spec.getStaleness() + "): worker " + worker + " at clock " + clock
        + " waits for workers " + slow + " to reach clock " + needed;
  }

  /** Moves every worker's clock up to at least {@code clock} (a restored shard knows no one's). */
  synchronized void raiseClocks(long clock) {
    for (int w = 0; w < clocks.length; w++) {
      clocks[w] = Math.max(clocks[w], clock);
    }
  }

  synchronized long[] clocks() {
    return clocks.clone();
  }

  synchronized void restoreClocks(long[] saved) {
    System.arraycopy(saved, 0, clocks, 0, Math.min(saved.length, clocks.length));
  }
}
