package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.wire.FiniteCheck;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.Payload;
import io.sparkps.ps.wire.PsError;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;


/**
 * Applies one update request (all frames of one call) to a shard: every piece is validated
 * under the locks of all touched slices before anything is written, so a refused request leaves
 * the shard unchanged.
 */
@Internal
public final class Updates {
  private final ShardStore store;

  /** Updates of {@code store}. */
  public Updates(ShardStore store) {
    this.store = store;
  }

  /** One segment of the request with its payload. */
  private record Piece(VariableSlice slice, Segment segment, float[] data, int dataOffset, int firstNonFinite) {}

  /** Values held by the shard's slices: no update carries more. */
  public long shardElements() {
    return store.elements();
  }

  /** Validates and applies; the frames all carry the same op, worker and step. */
  public UpdateReply apply(List<Payload> frames) {
    FrameHeader first = frames.get(0).header();
    List<Piece> pieces = new ArrayList<>();
    Set<String> names = new LinkedHashSet<>();
    for (Payload frame : frames) {
      FrameHeader h = frame.header();
      if (h.getOp() != first.getOp() || h.getWorker() != first.getWorker() || h.getStep() != first.getStep()) {
        throw PsError.invalid("frames of one update call disagree on op, worker or step (fields op, worker, step)");
      }
      int pos = 0;
      for (Segment seg : h.getSegmentsList()) {
        if (seg.getCount() < 0 || seg.getCount() > frame.count() - pos || seg.getOffset() < 0) {
          throw PsError.invalid("segment of '" + seg.getName() + "' claims " + seg.getCount() + " values at element "
              + seg.getOffset() + " but its frame holds " + (frame.count() - pos) + " more (fields count, offset)");
        }
        pieces.add(new Piece(store.slice(seg.getName()), seg, frame.data(), pos, frame.firstNonFinite()));
        names.add(seg.getName());
        pos += (int) seg.getCount();
      }
      if (pos != frame.count()) {
        throw PsError.invalid("frame carries " + frame.count() + " floats but its segments describe " + pos
            + " (field count)");
      }
    }
    List<VariableSlice> locked = store.lockAll(names);
    UpdateReply reply;
    try {
      for (Piece p : pieces) {
        validate(p, first);
      }
      if (first.getOp() == UpdateOp.INITIALIZE || first.getOp() == UpdateOp.RESTORE) {
        checkCoverage(pieces);
      }
      reply = applyValidated(first, pieces);
    } finally {
      ShardStore.unlockAll(locked);
    }
    store.waiters.signal();
    return reply;
  }

  private void validate(Piece p, FrameHeader h) {
    VariableSlice s = p.slice();
    Segment seg = p.segment();
    String where = "variable '" + s.name + "' on ps " + store.shardIndex;
    if (h.getOp() == UpdateOp.INITIALIZE) {
      // Values in the request win over the slice's initializer (its creator may have been a client
      // that learned the variable from the shards); an initializer FROM_VALUES needs them.
      if (seg.getCount() == 0 && s.spec.getInitializer().getKind() == InitializerKind.FROM_VALUES) {
        throw PsError.invalid(where + ": initializer FROM_VALUES needs its values in the request");
      }
    } else if (h.getOp() == UpdateOp.RESTORE) {
      if (seg.getCount() == 0 && s.spec.getInitializer().getKind() == InitializerKind.FROM_VALUES) {
        throw PsError.invalid(where + ": its initializer holds values this shard does not have: restore it with "
            + "its values");
      }
    } else if (!s.initialized) {
      throw PsError.precondition(where + " is not initialized: the chief initializes it "
          + "(initialize()) and other tasks wait with awaitInitialized()");
    }
    if (seg.getRowsCount() > 0) {
      for (long r : seg.getRowsList()) {
        if (r < s.rowStart || r >= s.rowEnd) {
          throw PsError.invalid(where + ": row " + r + " is outside rows [" + s.rowStart + ", "
              + s.rowEnd + ") held here (field rows)");
        }
      }
      if (seg.getCount() != (long) seg.getRowsCount() * s.rowLength) {
        throw PsError.invalid(where + ": " + seg.getRowsCount() + " rows of " + s.rowLength
            + " need " + seg.getRowsCount() * (long) s.rowLength + " values, got " + seg.getCount() + " (field count)");
      }
    } else if ((seg.getCount() > 0 || (h.getOp() != UpdateOp.INITIALIZE && h.getOp() != UpdateOp.RESTORE))
        && (seg.getOffset() < s.offset || seg.getCount() > s.offset + s.size - seg.getOffset())) {
      // (Compared without adding offset and count, which a crafted offset would overflow; an empty
      // segment's offset too, for it is used as an index. INITIALIZE and RESTORE without values fill
      // the whole slice, whatever their offset.)
      throw PsError.invalid(where + ": elements [" + seg.getOffset() + ", " + (seg.getOffset() + seg.getCount())
          + ") are outside the slice [" + s.offset + ", " + (s.offset + s.size) + ") of shape "
          + ShardStore.shape(s) + " (fields offset, count)");
    }
    if (!s.spec.getAllowNonFinite()) {
      checkFinite(p, where, h.getOp());
    }
    if (h.getOp() == UpdateOp.GRADIENT) {
      validateConsistency(s, h, where);
    }
  }

  private void checkCoverage(List<Piece> pieces) {
    Map<VariableSlice, Long> covered = new LinkedHashMap<>();
    pieces.forEach(p -> covered.merge(p.slice(), p.segment().getCount(), Long::sum));
    covered.forEach((s, n) -> {
      if (n > 0 && n != s.size) {
        throw PsError.invalid("initial values for variable '" + s.name + "' on ps " + store.shardIndex
            + " cover " + n + " of its " + s.size + " elements");
      }
    });
  }

  private static void checkFinite(Piece p, String where, UpdateOp op) {
    int n = (int) p.segment().getCount();
    int known = p.firstNonFinite();
    int bad;
    if (known == -1 || known >= p.dataOffset() + n) {
      bad = -1;
    } else if (known >= p.dataOffset()) {
      bad = known - p.dataOffset();
    } else {
      bad = FiniteCheck.firstNonFinite(p.data(), p.dataOffset(), n);
    }
    if (bad >= 0) {
      float value = p.data()[p.dataOffset() + bad];
      long element = p.segment().getOffset() + bad;
      throw PsError.invalid((op == UpdateOp.GRADIENT ? "gradient" : op.name().toLowerCase() + " value")
          + " for " + where + " has " + value + " at element " + element
          + "; the update was rejected and nothing was applied (fix the computation, or create the "
          + "variable with allowNonFinite to accept such values)");
    }
  }

  private void validateConsistency(VariableSlice s, FrameHeader h, String where) {
    GroupState g = store.group(s);
    if (g.mode() == ConsistencyMode.ASYNC) {
      return;
    }
    if (h.getWorker() < 0 || h.getWorker() >= g.spec.getNumWorkers()) {
      throw SyncArrivals.outsideGroup(where, h.getWorker(), g.spec.getName(), g.spec.getNumWorkers());
    }
    if (g.mode() == ConsistencyMode.SYNC && h.getStep() > s.version) {
      throw SyncArrivals.ahead(where, h.getWorker(), "a gradient", h.getStep(), "variable", s.version);
    }
  }

  private UpdateReply applyValidated(FrameHeader h, List<Piece> pieces) {
    UpdateReply.Builder reply = UpdateReply.newBuilder();
    Map<VariableSlice, Boolean> touched = new LinkedHashMap<>();
    Map<VariableSlice, Long> versions = new LinkedHashMap<>();
    for (Piece p : pieces) {
      versions.put(p.slice(), p.segment().getVersion());
      Boolean skipped = touched.get(p.slice());
      if (skipped == null) {
        skipped = isRepeat(h, p.slice());
        touched.put(p.slice(), skipped);
      }
      if (!skipped) {
        applyPiece(h, p);
      }
    }
    for (Map.Entry<VariableSlice, Boolean> e : touched.entrySet()) {
      VariableSlice s = e.getKey();
      if (!e.getValue()) {
        finish(h, s, versions.getOrDefault(s, 0L), reply);
      }
      reply.setVersion(Math.max(reply.getVersion(), s.version));
    }
    return reply.build();
  }

  /**
   * An initialization or restore of an initialized slice, a SYNC gradient this worker already
   * sent, or one of a step the slice has completed: a worker that restarted (a retried stage) or
   * moved to a replacement shard (which starts at a later step) repeats pushes of such steps.
   */
  private boolean isRepeat(FrameHeader h, VariableSlice s) {
    return switch (h.getOp()) {
      case INITIALIZE, RESTORE -> s.initialized;
      case GRADIENT -> store.group(s).mode() == ConsistencyMode.SYNC && s.isSyncRepeat(h.getWorker(), h.getStep());
      default -> false;
    };
  }

  private void applyPiece(FrameHeader h, Piece p) {
    VariableSlice s = p.slice();
    Segment seg = p.segment();
    boolean sync = store.group(s).mode() == ConsistencyMode.SYNC;
    if ((h.getOp() == UpdateOp.INITIALIZE || h.getOp() == UpdateOp.RESTORE) && seg.getCount() == 0) {
      InitFill.fill(s.spec.getInitializer(), s.values, s.offset);
      return;
    }
    float rateScale = sync ? 1f : rateScale(h, s);
    if (seg.getRowsCount() > 0) {
      for (int k = 0; k < seg.getRowsCount(); k++) {
        int local = (int) (seg.getRows(k) - s.rowStart);
        int gOff = p.dataOffset() + k * s.rowLength;
        if (h.getOp() == UpdateOp.GRADIENT && sync) {
          s.accumulateRow(p.data(), gOff, local);
        } else {
          write(h.getOp(), s, local * s.rowLength, p.data(), gOff, s.rowLength, rateScale);
        }
      }
      return;
    }
    int at = (int) (seg.getOffset() - s.offset);
    if (h.getOp() == UpdateOp.GRADIENT && sync) {
      s.accumulate(p.data(), p.dataOffset(), at, (int) seg.getCount());
    } else {
      write(h.getOp(), s, at, p.data(), p.dataOffset(), (int) seg.getCount(), rateScale);
    }
  }

  /**
   * In a group with the staleness-aware rate, {@code 1 / (1 + tau)} for a gradient computed from
   * the slice's values {@code tau} updates ago (its frame's read version against the slice's
   * version before this update); else 1.
   */
  private float rateScale(FrameHeader h, VariableSlice s) {
    if (h.getOp() != UpdateOp.GRADIENT || !h.hasReadVersion() || !store.group(s).spec.getStalenessAwareRate()) {
      return 1f;
    }
    long tau = Math.max(0, s.version - h.getReadVersion());
    return 1f / (1 + tau);
  }

  private static void write(UpdateOp op, VariableSlice s, int at, float[] g, int gOff, int n, float rateScale) {
    switch (op) {
      case GRADIENT -> s.rule.apply(s.values, at, g, gOff, n, s.iteration, rateScale);
      case ASSIGN, INITIALIZE, RESTORE -> System.arraycopy(g, gOff, s.values, at, n);
      case ASSIGN_ADD -> {
        for (int i = 0; i < n; i++) {
          s.values[at + i] += g[gOff + i];
        }
      }
      default -> throw PsError.invalid("unknown update op " + op + " (field op)");
    }
  }

  private void finish(FrameHeader h, VariableSlice s, long version, UpdateReply.Builder reply) {
    switch (h.getOp()) {
      case INITIALIZE -> {
        s.initialized = true;
        reply.addInitialized(s.name);
      }
      case RESTORE -> {
        GroupState g = store.group(s);
        s.initialized = true;
        if (g.mode() == ConsistencyMode.SYNC) {
          s.version = h.getStep();
        } else {
          s.version = version;
          if (g.mode() == ConsistencyMode.SSP) {
            g.raiseClocks(h.getStep());
          }
        }
        s.iteration = s.version;
        // With the state restored before, its bias correction goes on counting the updates it took in;
        // refilled without it, it starts afresh here.
        s.rule.stateSince(s.iteration - Math.max(0, s.restoredStateSteps));
        reply.addInitialized(s.name);
      }
      case GRADIENT -> {
        GroupState g = store.group(s);
        if (g.mode() == ConsistencyMode.SYNC) {
          s.completeSyncContribution(h.getWorker(), g.spec.getNumWorkers());
          return;
        }
        if (g.mode() == ConsistencyMode.SSP) {
          g.advance(h.getWorker(), h.getStep());
        }
        s.iteration++;
        s.version++;
      }
      default -> s.version++;
    }
  }
}
