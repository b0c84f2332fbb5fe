package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.wire.FloatRange;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PsError;
import io.sparkps.ps.wire.SparseValues;
import java.util.ArrayList;
import java.util.List;


/**
 * Serves pulls: decides whether a pull may be served now (SYNC and SSP reads wait) and writes
 * the requested values as frames of at most {@code maxFrameFloats} floats. All slices of one
 * pull are read under their locks, so each pull sees each slice at one version.
 */
@Internal
public final class Reads {
  /** Receives the frames of a pull, in order; called with the slices locked. */
  public interface FrameSink {
    /** One frame: its header and the float ranges that make up its payload. */
    void emit(FrameHeader header, List<FloatRange> parts);
  }

  /** Receives the segments of a sparse pull, in order; called with the slices locked. */
  public interface SparseSink {
    /** A whole slice, dense: {@code values} hold its {@code segment.getCount()} values. */
    void dense(Segment segment, FloatRange values);

    /** A slice's {@code segment.getNonzeros()} pairs, laid out as {@link SparseValues} says. */
    void sparse(Segment segment, java.nio.ByteBuffer pairs);
  }

  private final ShardStore store;
  private final int maxFrameFloats;

  /** Reads of {@code store} in frames of at most {@code maxFrameFloats} floats. */
  public Reads(ShardStore store, int maxFrameFloats) {
    this.store = store;
    this.maxFrameFloats = maxFrameFloats;
  }

  /** Refuses a pull of unknown or uninitialized variables or rows outside the slice. */
  public void validate(PullRequest request) {
    for (PullItem item : request.getItemsList()) {
      VariableSlice s = store.slice(item.getName());
      String where = "variable '" + s.name + "' on ps " + store.shardIndex;
      if (!s.initialized) {
        throw PsError.precondition(where + " is not initialized: the chief initializes it "
            + "(initialize()) and other tasks wait with awaitInitialized()");
      }
      store.limits.checkRows(s.name, item.getRowsCount(), s.rowLength);
      for (long r : item.getRowsList()) {
        if (r < s.rowStart || r >= s.rowEnd) {
          throw PsError.invalid(where + ": row " + r + " is outside rows [" + s.rowStart + ", " + s.rowEnd
              + ") (field rows)");
        }
      }
      if (!isWhole(item) && (item.getRowStart() < s.rowStart || item.getRowEnd() > s.rowEnd
          || item.getRowStart() >= item.getRowEnd())) {
        throw PsError.invalid(where + ": rows [" + item.getRowStart() + ", " + item.getRowEnd()
            + ") are not within the rows [" + s.rowStart + ", " + s.rowEnd + ") held here (fields row_start, row_end)");
      }
    }
  }

  /** Null when the pull may be served now, else what it waits for. */
  public String blocker(PullRequest request) {
    for (PullItem item : request.getItemsList()) {
      VariableSlice s = store.slice(item.getName());
      GroupState g = store.group(s);
      if (g.mode() == ConsistencyMode.SYNC) {
        s.lock.lock();
        try {
          if (s.version < request.getClock()) {
            return "SYNC group '" + g.spec.getName() + "': worker " + request.getWorker()
                + " reads step " + request.getClock() + " of variable '" + s.name + "' (ps "
                + store.shardIndex + ", at step " + s.version + "), waiting for the gradients of workers "
                + s.missingSyncWorkers(g.spec.getNumWorkers());
          }
        } finally {
          s.lock.unlock();
        }
      } else if (g.mode() == ConsistencyMode.SSP) {
        String blocked = g.sspBlocker(request.getWorker(), request.getClock());
        if (blocked != null) {
          return blocked;
        }
      }
    }
    return null;
  }

  /** Writes the pulled values to {@code sink}. */
  public void read(PullRequest request, FrameSink sink) {
    List<VariableSlice> locked = store.lockAll(
        request.getItemsList().stream().map(PullItem::getName).toList());
    try {
      Packer packer = new Packer(sink);
      for (PullItem item : request.getItemsList()) {
        VariableSlice s = store.slice(item.getName());
        if (item.getRowsCount() > 0) {
          packRows(packer, s, item.getRowsList());
        } else {
          long start = isWhole(item) ? s.rowStart : item.getRowStart();
          long end = isWhole(item) ? s.rowEnd : item.getRowEnd();
          int from = (int) ((start - s.rowStart) * s.rowLength);
          packer.dense(s, from, (int) ((end - start) * s.rowLength));
        }
      }
      packer.flush();
    } finally {
      ShardStore.unlockAll(locked);
    }
  }

  /**
   * Writes a sparse pull of whole slices to {@code sink}. A slice the worker holds as of the
   * generation its item names is answered with the elements that moved most since, at most
   * {@code density} of them, which its copy then takes; otherwise, or when small, it is answered
   * whole and the copy made anew.
   */
  public void readSparse(PullRequest request, SparseSink sink) {
    double density = request.getDensity();
    if (!(density > 0 && density <= 1)) {
      throw PsError.invalid("sparse pull density " + density + " is not within (0, 1] (field density)");
    }
    for (PullItem item : request.getItemsList()) {
      if (item.getRowsCount() > 0 || !isWhole(item)) {
        throw PsError.invalid("sparse pulls read whole variables; '" + item.getName() + "' asks for rows (fields rows, "
            + "row_start, row_end)");
      }
    }
    List<VariableSlice> locked = store.lockAll(request.getItemsList().stream().map(PullItem::getName).toList());
    try {
      for (PullItem item : request.getItemsList()) {
        VariableSlice s = store.slice(item.getName());
        Segment.Builder seg = Segment.newBuilder().setName(s.name).setOffset(s.offset).setCount(s.size)
            .setVersion(s.version);
        Replicas.Copy copy = s.size < SparseValues.MIN_ELEMENTS ? null : s.replicas.of(request.getWorker(), s.size);
        if (copy == null || copy.generation == 0 || item.getKnownGeneration() != copy.generation) {
          if (copy != null) {
            System.arraycopy(s.values, 0, copy.values, 0, s.size);
            copy.generation = Replicas.nextGeneration();
            seg.setGeneration(copy.generation);
          }
          sink.dense(seg.build(), new FloatRange(s.values, 0, s.size));
          continue;
        }
        float[] moved = SparseScratch.get(s.size);
        float[] held = copy.values;
        for (int i = 0; i < s.size; i++) {
          moved[i] = s.values[i] - held[i];
        }
        int[] idx = SparseValues.indices(s.size);
        int k = SparseValues.selectLargest(moved, 0, s.size, SparseValues.budget(density, s.size), idx,
            s.version * 1_000_003L + request.getWorker());
        for (int j = 0; j < k; j++) {
          held[idx[j]] = s.values[idx[j]];
        }
        copy.generation = Replicas.nextGeneration();
        sink.sparse(seg.setNonzeros(k).setGeneration(copy.generation).build(), SparseValues.pairs(idx, k, s.values, 0));
      }
    } finally {
      ShardStore.unlockAll(locked);
    }
  }

  /** Each serving thread's array for a slice's differences. */
  private static final class SparseScratch {
    private static final ThreadLocal<float[][]> HELD = ThreadLocal.withInitial(() -> new float[1][0]);

    static float[] get(int n) {
      float[][] h = HELD.get();
      if (h[0].length < n) {
        h[0] = new float[n];
      }
      return h[0];
    }
  }

  private void packRows(Packer packer, VariableSlice s, List<Long> rows) {
    int perFrame = Math.max(1, maxFrameFloats / Math.max(1, s.rowLength));
    for (int first = 0; first < rows.size(); first += perFrame) {
      List<Long> part = rows.subList(first, Math.min(rows.size(), first + perFrame));
      float[] gathered = new float[part.size() * s.rowLength];
      for (int k = 0; k < part.size(); k++) {
        System.arraycopy(s.values, (int) (part.get(k) - s.rowStart) * s.rowLength, gathered,
            k * s.rowLength, s.rowLength);
      }
      packer.flush();
      packer.add(Segment.newBuilder().setName(s.name).setCount(gathered.length).addAllRows(part)
          .setVersion(s.version).build(), new FloatRange(gathered, 0, gathered.length));
      packer.flush();
    }
  }

  private static boolean isWhole(PullItem item) {
    return item.getRowStart() == 0 && item.getRowEnd() == 0;
  }

  /** Packs segments into frames of at most {@code maxFrameFloats}. */
  private final class Packer {
    private final FrameSink sink;
    private FrameHeader.Builder header = FrameHeader.newBuilder();
    private List<FloatRange> parts = new ArrayList<>();
    private int floats;

    Packer(FrameSink sink) {
      this.sink = sink;
    }

    void dense(VariableSlice s, int from, int n) {
      int done = 0;
      do {
        int take = Math.min(n - done, maxFrameFloats - floats);
        if (take == 0 && n > 0) {
          flush();
          continue;
        }
        add(Segment.newBuilder().setName(s.name).setOffset(s.offset + from + done).setCount(take)
            .setVersion(s.version).build(), new FloatRange(s.values, from + done, take));
        done += take;
      } while (done < n);
    }

    void add(Segment segment, FloatRange range) {
      header.addSegments(segment);
      parts.add(range);
      floats += range.length();
    }

    void flush() {
      if (header.getSegmentsCount() == 0) {
        return;
      }
      sink.emit(header.build(), parts);
      header = FrameHeader.newBuilder();
      parts = new ArrayList<>();
      floats = 0;
    }
  }
}
