package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.GroupSpec;
import java.util.List;

/**
 * The consistency of one embedding table on one ps, as its group says (a table without a group is
 * ASYNC and has none of this):
 *
 * <ul>
 *   <li><b>SYNC</b>: each worker pushes every step (an empty push where it touched no row of this
 *       ps). The row gradients of step t are summed per id over the workers and applied once, as
 *       their mean over the workers, when the last worker's push arrives: each touched row takes
 *       one optimizer step per training step. A training pull of step t waits until step t - 1 is
 *       applied. A push repeated (a retry) is taken once.
 *   <li><b>SSP(s)</b>: pushes apply at once and advance the pushing worker's clock; a training pull
 *       of step t waits until every worker has pushed step t - s - 1.
 * </ul>
 *
 * The table's step is taken from the first push it sees (a new table, or one restored from a
 * checkpoint, takes the workers' step). Not thread-safe: guarded by the table's rows' monitor.
 */
final class TableSync {
  private final String table;
  private final int shard;
  private final GroupSpec group;
  /** SYNC: the next step to apply (-1: none seen yet). */
  private long step = -1;
  private final SyncArrivals arrived = new SyncArrivals();
  /** SYNC: the step's distinct ids (position of each in {@link #sums}), without boxing an id. */
  private IdSlots pending = new IdSlots(1024);
  private long[] pendingIds = new long[1024];
  private float[] sums = new float[0];
  /** SSP: the workers' clocks. */
  private final SspClocks clocks;
  /**
   * SYNC: whether this table came back from a checkpoint and has completed no step since, so that a
   * push may follow a pull the ps it replaced served ({@link #pushCatchesUp}).
   */
  private boolean restored;

  TableSync(String table, int shard, GroupSpec group) {
    this.table = table;
    this.shard = shard;
    this.group = group;
    this.clocks = new SspClocks(group.getNumWorkers());
  }

  /** Marks this table as one that came back from a checkpoint (see {@link #pushCatchesUp}). */
  TableSync restored() {
    restored = true;
    return this;
  }

  /**
   * Whether a push ahead of the table first catches it up as a pull would ({@link #catchUp}): only
   * on a table restored from a checkpoint that has completed no step since, whose workers' pulls of
   * the step may have gone to the ps it replaced. Anywhere else a push ahead is refused.
   */
  boolean pushCatchesUp() {
    return restored;
  }

  /** The group's name. */
  String group() {
    return group.getName();
  }

  private void checkWorker(int worker) {
    if (worker < 0 || worker >= group.getNumWorkers()) {
      throw SyncArrivals.outsideGroup("embedding table '" + table + "'", worker, group.getName(),
          group.getNumWorkers());
    }
  }

  /** Null when {@code worker} may read its rows for training step {@code at}, else whom it waits for. */
  String blocker(int worker, long at) {
    checkWorker(worker);
    if (group.getMode() == ConsistencyMode.SYNC) {
      if (step < 0 || step >= at) {
        return null;
      }
      return "SYNC embedding table '" + table + "' on ps " + shard + " is at step " + step + ": worker " + worker
          + "'s pull of step " + at + " waits for workers " + missing() + " to push step " + step;
    }
    List<Integer> slow = clocks.behind(at, group.getStaleness());
    return slow.isEmpty() ? null : "SSP embedding table '" + table + "' on ps " + shard + " (staleness "
        + group.getStaleness() + "): worker " + worker + " at step " + at + " waits for workers " + slow
        + " to reach step " + (at - group.getStaleness());
  }

  private List<Integer> missing() {
    return arrived.missing(group.getNumWorkers());
  }

  /**
   * SYNC: what a training pull (or a push: it follows the pull of its step, which may have gone to
   * the ps this one replaced) of step {@code at} by {@code worker} tells a table that came back
   * from a checkpoint behind the workers (a replaced ps's, refilled): a worker pulls step n only
   * after its push of step n - 1 was taken by every ps it then reached, so a push of n - 1 this
   * table never saw went to the ps it replaced and is lost with it; it counts, empty. Steps before
   * n - 1 every worker had pushed (the pull of n waited for them elsewhere): the table moves on to
   * n - 1, dropping what it held of them. Returns the step to apply now when that completes it, or
   * null. In a run without a replacement it changes nothing: every push reaches every ps before
   * the pull that follows it.
   */
  Apply catchUp(int worker, long at, int dim) {
    checkWorker(worker);
    if (group.getMode() != ConsistencyMode.SYNC || step < 0 || at <= step) {
      return null;
    }
    if (step < at - 1) {
      pending = new IdSlots(1024);
      java.util.Arrays.fill(sums, 0f);
      arrived.clear();
      step = at - 1;
    }
    return arrived.has(worker) ? null : push(worker, new long[0], new float[0], step, dim);
  }

  /** Row gradients to apply now: distinct ids and {@code ids.length * dim} values. */
  record Apply(long[] ids, float[] gradients) {}

  /**
   * Takes {@code worker}'s push of step {@code at}; returns what to apply to the rows now (SSP:
   * the push itself; SYNC: the step's mean once every worker pushed it), or null.
   */
  Apply push(int worker, long[] ids, float[] gradients, long at, int dim) {
    checkWorker(worker);
    if (group.getMode() != ConsistencyMode.SYNC) {
      clocks.advance(worker, at);
      return new Apply(ids, gradients);
    }
    if (step < 0) {
      step = at;
    }
    if (arrived.isRepeat(worker, at, step)) {
      return null; // a retry of a push already taken
    }
    if (at > step) {
      throw SyncArrivals.ahead("embedding table '" + table + "' on ps " + shard, worker, "gradients", at, "table",
          step);
    }
    for (int i = 0; i < ids.length; i++) {
      int row = pending.get(ids[i]);
      if (row < 0) {
        row = pending.size();
        if (row == pendingIds.length) {
          pendingIds = java.util.Arrays.copyOf(pendingIds, 2 * row);
        }
        if ((row + 1) * dim > sums.length) {
          sums = java.util.Arrays.copyOf(sums, Math.max(1024 * dim, 2 * sums.length));
        }
        pending.put(ids[i], row);
        pendingIds[row] = ids[i];
      }
      for (int k = 0; k < dim; k++) {
        sums[row * dim + k] += gradients[i * dim + k];
      }
    }
    if (!arrived.arrive(worker, group.getNumWorkers())) {
      return null;
    }
    int distinct = pending.size();
    float[] mean = java.util.Arrays.copyOf(sums, distinct * dim);
    for (int j = 0; j < mean.length; j++) {
      mean[j] /= group.getNumWorkers();
    }
    long[] all = java.util.Arrays.copyOf(pendingIds, distinct);
    java.util.Arrays.fill(sums, 0, distinct * dim, 0f);
    pending = new IdSlots(Math.max(1024, distinct));
    arrived.clear();
    step++;
    restored = false;
    return new Apply(all, mean);
  }
}
