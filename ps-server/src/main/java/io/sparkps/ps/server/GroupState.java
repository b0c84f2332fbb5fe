package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.GroupSpec;
import java.util.List;

/** A consistency group on one shard: its spec and, for SSP, its workers' clocks. Guarded by itself. */
final class GroupState {
  final GroupSpec spec;
  private final SspClocks clocks;

  GroupState(GroupSpec spec) {
    this.spec = spec;
    this.clocks = new SspClocks(spec.getNumWorkers());
  }

  ConsistencyMode mode() {
    return spec.getMode();
  }

  /** Records that {@code worker} finished step {@code step}. */
  synchronized void advance(int worker, long step) {
    clocks.advance(worker, step);
  }

  /** For SSP: null when a worker at {@code clock} may read, else who it waits for. */
  synchronized String sspBlocker(int worker, long clock) {
    List<Integer> slow = clocks.behind(clock, spec.getStaleness());
    return slow.isEmpty() ? null : "SSP group '" + spec.getName() + "' (staleness "
        + spec.getStaleness() + "): worker " + worker + " at clock " + clock
        + " waits for workers " + slow + " to reach clock " + (clock - spec.getStaleness());
  }

  /** Moves every worker's clock up to at least {@code clock} (a restored shard knows no one's). */
  synchronized void raiseClocks(long clock) {
    clocks.raise(clock);
  }

  synchronized long[] clocks() {
    return clocks.values();
  }

  synchronized void restoreClocks(long[] saved) {
    clocks.restore(saved);
  }
}
