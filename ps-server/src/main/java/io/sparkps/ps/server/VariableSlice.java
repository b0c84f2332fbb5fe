package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.OptimizerConfig;
import java.util.BitSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The rows {@code [rowStart, rowEnd)} of one variable held by this shard, with optimizer state,
 * version and SYNC accumulator. Every field below the lock is guarded by {@link #lock}.
 */
final class VariableSlice {
  final VariableSpecProto spec;
  final String name;
  final long rowStart;
  final long rowEnd;
  final int rowLength;
  final long offset;
  final int size;
  final ReentrantLock lock = new ReentrantLock();

  final float[] values;
  final UpdateRule rule;
  long version;
  long iteration;
  boolean initialized;
  /**
   * A replacement's optimizer state restored before its values ({@link OptimizerStates#restore}):
   * the updates it had taken in, kept by the RESTORE that initializes the slice; -1: none restored,
   * the state starts afresh there.
   */
  long restoredStateSteps = -1;
  /** Sparse pulls: what each worker holds of this slice. */
  final Replicas replicas = new Replicas();

  /** SYNC: sum of this step's gradients, the workers that sent them, and the rows touched. */
  private float[] syncSum;
  private final SyncArrivals syncWorkers = new SyncArrivals();
  private BitSet syncRows;
  private boolean syncDense;

  VariableSlice(VariableSpecProto spec, OptimizerConfig optimizer, long rowStart, long rowEnd) {
    this.spec = spec;
    this.name = spec.getName();
    this.rowStart = rowStart;
    this.rowEnd = rowEnd;
    long rows = spec.getShapeCount() == 0 ? 1 : spec.getShape(0);
    long length = 1;
    for (long d : spec.getShapeList()) {
      length *= d;
    }
    this.rowLength = (int) (length / Math.max(1, rows));
    this.offset = rowStart * rowLength;
    this.size = (int) ((rowEnd - rowStart) * rowLength);
    this.values = new float[size];
    this.rule = new UpdateRule(optimizer, size);
  }

  /** Whether {@code worker}'s SYNC gradient of step {@code at} was taken before (a retry). */
  boolean isSyncRepeat(int worker, long at) {
    return syncWorkers.isRepeat(worker, at, version);
  }

  /** Adds a dense gradient for the current SYNC step. */
  void accumulate(float[] g, int gOff, int at, int n) {
    addInto(g, gOff, at, n);
    syncDense = true;
  }

  /** Adds one row of a sparse gradient for the current SYNC step. */
  void accumulateRow(float[] g, int gOff, int localRow) {
    addInto(g, gOff, localRow * rowLength, rowLength);
    if (syncRows == null) {
      syncRows = new BitSet();
    }
    syncRows.set(localRow);
  }

  /**
   * Marks {@code worker}'s gradient for this step as complete; when all {@code numWorkers} have
   * arrived, applies their average once and advances the version. Returns whether it applied.
   */
  boolean completeSyncContribution(int worker, int numWorkers) {
    if (!syncWorkers.arrive(worker, numWorkers)) {
      return false;
    }
    float[] sum = syncSum();
    for (int i = 0; i < size; i++) {
      sum[i] = sum[i] / numWorkers;
    }
    if (syncRows == null || syncDense) {
      rule.apply(values, 0, sum, 0, size, iteration);
    } else {
      for (int r = syncRows.nextSetBit(0); r >= 0; r = syncRows.nextSetBit(r + 1)) {
        rule.apply(values, r * rowLength, sum, r * rowLength, rowLength, iteration);
      }
    }
    iteration++;
    version++;
    java.util.Arrays.fill(sum, 0f);
    syncWorkers.clear();
    syncRows = null;
    syncDense = false;
    return true;
  }

  /** Workers whose SYNC gradient for the current step is still missing. */
  String missingSyncWorkers(int numWorkers) {
    return syncWorkers.missing(numWorkers).toString();
  }

  private void addInto(float[] g, int gOff, int at, int n) {
    float[] sum = syncSum();
    for (int i = 0; i < n; i++) {
      sum[at + i] += g[gOff + i];
    }
  }

  private float[] syncSum() {
    if (syncSum == null) {
      syncSum = new float[size];
    }
    return syncSum;
  }
}
