package io.sparkps.ps.client;

import io.sparkps.ps.Placement;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.bulk.BulkChannel;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.spec.VariableSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * The writing half of {@link PsClient}: initializes, pushes and assigns, building each shard's frames
 * and sending them in parallel (over its bulk port when large), and keeps the worker's step and the
 * version its gradients were computed from. {@link Pulls} is the reading half.
 */
final class Transfers {
  private final List<ShardStub> shards;
  private final Connections connections;
  private final int chunkBytes;
  private final int worker;
  private final Duration callTimeout;
  private final AtomicLong step = new AtomicLong();
  /** The lowest slice version of the last whole pull, sent with gradients (-1: none yet). */
  private volatile long readVersion = -1;
  private final Calls.Recoverer recoverer;
  /** Sparse gradients and pulls (null: dense). */
  private final SparseTransfers sparse;
  /**
   * Transfers to one shard of at least this many bytes go over its bulk port when it has one, the
   * others as gRPC calls; to a shard in this JVM, dense transfers of any size go through memory.
   */
  private final long bulkMinBytes;

  Transfers(Connections connections, int chunkBytes, int worker, Duration callTimeout, Calls.Recoverer recoverer,
      SparseTransfers sparse, long bulkMinBytes) {
    this.bulkMinBytes = bulkMinBytes;
    this.recoverer = recoverer;
    this.sparse = sparse;
    this.connections = connections;
    this.shards = connections.stubs();
    this.chunkBytes = chunkBytes;
    this.worker = worker;
    this.callTimeout = callTimeout;
  }

  long step() {
    return step.get();
  }

  void setStep(long s) {
    step.set(s);
  }

  void advanceStep() {
    step.incrementAndGet();
  }

  /**
   * Writes {@code values} ({@code what}: push, assign or assignAdd) to the named variables, each
   * checked against its declared shape first.
   */
  void update(UpdateOp op, Map<String, INDArray> values, VariableCatalog catalog, String what) {
    Map<String, INDArray> dense = new java.util.LinkedHashMap<>();
    values.forEach((n, a) -> {
      VariableSpec spec = catalog.resolve(n);
      VariableCatalog.checkShape(spec, a, what);
      dense.put(n, TensorCodec.dense(a));
    });
    updateDense(op, dense, catalog.specs(), catalog.placement(), what);
  }

  /** Records the version a whole pull read: the next dense gradients say they were computed from it. */
  void readVersion(long version) {
    readVersion = version;
  }

  /** The version the last whole pull read, or -1. */
  long readVersion() {
    return readVersion;
  }

  Set<String> initialize(List<VariableSpec> vars, Placement placement) {
    Map<Integer, List<TensorCodec.Piece>> pieces = new LinkedHashMap<>();
    ByteBuffer none = ByteBuffer.allocate(0);
    for (VariableSpec v : vars) {
      INDArray values = v.initializer().values();
      ByteBuffer bytes = values == null ? null : TensorCodec.bytes(values);
      for (Placement.Slice s : placement.slicesOf(v.name())) {
        pieces.computeIfAbsent(s.shard(), k -> new ArrayList<>()).add(new TensorCodec.Piece(v.name(), s.offset(),
            List.of(), bytes == null ? none : TensorCodec.range(bytes, s.offset(), s.length())));
      }
    }
    Set<String> initialized = new LinkedHashSet<>();
    for (UpdateReply r : send(UpdateOp.INITIALIZE, pieces, Map.of(), "initialize")) {
      initialized.addAll(r.getInitializedList());
    }
    return initialized;
  }

  void updateDense(UpdateOp op, Map<String, INDArray> values, Map<String, VariableSpec> specs, Placement placement,
      String what) {
    Map<Integer, List<TensorCodec.Piece>> pieces = new LinkedHashMap<>();
    Map<TensorCodec.Piece, SparseTransfers.Pairs> picked = new java.util.IdentityHashMap<>();
    boolean pick = op == UpdateOp.GRADIENT && sparse != null;
    long shardsTouched = values.keySet().stream().flatMap(n -> placement.slicesOf(n).stream())
        .mapToInt(Placement.Slice::shard).distinct().count();
    values.forEach((name, array) -> {
      ByteBuffer bytes = TensorCodec.bytes(array);
      if (!specs.get(name).allowNonFinite() && (shardsTouched > 1 || pick)) {
        // Spanning several shards: check here so that a bad value reaches none of them. (A push to
        // one shard is checked there, while the payload is in cache, before anything is applied.)
        // Sparse: a NaN must not hide in the residual.
        long bad = TensorCodec.firstNonFinite(bytes);
        if (bad >= 0) {
          throw new IllegalArgumentException(what + " of variable '" + name + "' has "
              + bytes.getFloat((int) bad * 4) + " at element " + bad + "; nothing was sent (fix the "
              + "computation, or create the variable with allowNonFinite to accept such values)");
        }
      }
      for (Placement.Slice s : placement.slicesOf(name)) {
        TensorCodec.Piece piece = new TensorCodec.Piece(name, s.offset(), List.of(),
            TensorCodec.range(bytes, s.offset(), s.length()));
        if (pick && s.length() >= io.sparkps.ps.wire.SparseValues.MIN_ELEMENTS) {
          picked.put(piece, sparse.pick(name, s.offset(), piece.bytes()));
        }
        pieces.computeIfAbsent(s.shard(), k -> new ArrayList<>()).add(piece);
      }
    });
    send(op, pieces, picked, what);
  }

  void pushRows(VariableSpec spec, List<Placement.Slice> slices, long[] rows, INDArray gradient) {
    int rowLen = (int) spec.rowLength();
    INDArray g = TensorCodec.dense(gradient);
    if (g.length() != (long) rows.length * rowLen) {
      throw new IllegalArgumentException("gradient for " + rows.length + " rows of '" + spec.name() + "' needs "
          + (long) rows.length * rowLen + " values (rows x " + rowLen + "), got shape " + TensorCodec.shape(g.shape()));
    }
    ByteBuffer src = TensorCodec.bytes(g);
    long bad = spec.allowNonFinite() ? -1 : TensorCodec.firstNonFinite(src);
    if (bad >= 0) {
      throw new IllegalArgumentException("row gradient of variable '" + spec.name() + "' has a NaN or infinite value at "
          + "element " + bad + "; nothing was sent");
    }
    Map<Long, float[]> summed = new LinkedHashMap<>();
    for (int k = 0; k < rows.length; k++) {
      float[] row = summed.computeIfAbsent(rows[k], r -> new float[rowLen]);
      for (int i = 0; i < rowLen; i++) {
        row[i] += src.getFloat((k * rowLen + i) * 4);
      }
    }
    int perFrame = Math.max(1, chunkBytes / 4 / rowLen);
    Map<Integer, List<TensorCodec.Piece>> pieces = new LinkedHashMap<>();
    for (Placement.Slice s : slices) {
      List<Long> mine = summed.keySet().stream().filter(r -> r >= s.rowStart() && r < s.rowEnd()).toList();
      for (int from = 0; from < mine.size(); from += perFrame) {
        List<Long> part = mine.subList(from, Math.min(mine.size(), from + perFrame));
        ByteBuffer bytes = ByteBuffer.allocate(part.size() * rowLen * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (Long r : part) {
          for (float f : summed.get(r)) {
            bytes.putFloat(f);
          }
        }
        bytes.flip();
        pieces.computeIfAbsent(s.shard(), k -> new ArrayList<>()).add(new TensorCodec.Piece(spec.name(), 0, part, bytes));
      }
    }
    send(UpdateOp.GRADIENT, pieces, Map.of(), "pushRows");
  }

  /**
   * Sends each shard its pieces; those in {@code picked} go as their sparse pairs over the bulk
   * port, or dense with zeros where nothing was picked over gRPC (the same update either way).
   */
  private List<UpdateReply> send(UpdateOp op, Map<Integer, List<TensorCodec.Piece>> pieces,
      Map<TensorCodec.Piece, SparseTransfers.Pairs> picked, String what) {
    FrameHeader.Builder frame = FrameHeader.newBuilder().setOp(op).setWorker(worker).setStep(step.get());
    long read = readVersion;
    if (op == UpdateOp.GRADIENT && read >= 0 && pieces.values().stream().flatMap(List::stream)
        .allMatch(p -> p.rows().isEmpty())) {
      frame.setReadVersion(read); // a dense gradient: computed from the values of the last whole pull
    }
    FrameHeader template = frame.build();
    Map<Integer, Function<ShardStub, CompletableFuture<UpdateReply>>> calls = new LinkedHashMap<>();
    pieces.forEach((shard, list) -> calls.put(shard, stub -> {
      long bytes = list.stream().mapToLong(p -> p.bytes().remaining()).sum();
      boolean dense = list.stream().allMatch(p -> p.rows().isEmpty());
      boolean anyPicked = list.stream().anyMatch(picked::containsKey);
      java.util.function.Supplier<List<TensorCodec.Piece>> plain = () -> !anyPicked ? list : list.stream()
          .map(p -> picked.containsKey(p) ? new TensorCodec.Piece(p.name(), p.offset(), p.rows(), picked.get(p).dense()) : p)
          .toList();
      if ((bytes < bulkMinBytes && !connections.sameJvm(shard) && !anyPicked) || !dense) {
        return stub.update(TensorCodec.frames(template, plain.get(), chunkBytes));
      }
      return CompletableFuture.supplyAsync(() -> {
        BulkChannel bulk = connections.bulk(shard);
        if (bulk == null) {
          return ShardStub.await(stub.update(TensorCodec.frames(template, plain.get(), chunkBytes)), callTimeout);
        }
        FrameHeader.Builder header = template.toBuilder();
        if (anyPicked) {
          header.setEncoding(io.sparkps.ps.grpc.proto.WireEncoding.SPARSE);
        }
        List<ByteBuffer> parts = new ArrayList<>(list.size());
        for (TensorCodec.Piece p : list) {
          SparseTransfers.Pairs q = picked.get(p);
          Segment.Builder seg = Segment.newBuilder().setName(p.name()).setOffset(p.offset());
          header.addSegments(q == null ? seg.setCount(p.floats()) : seg.setCount(q.count()).setNonzeros(q.nonzeros()));
          parts.add(q == null ? p.bytes() : q.bytes().duplicate());
        }
        try {
          return bulk.update(header.build(), parts);
        } catch (RuntimeException e) {
          if (!BulkClient.mayTakeAnotherPath(e)) {
            throw e;
          }
          // Nothing was sent: the bulk port is full (strangers flooding it?) or unreachable; gRPC carries it.
          return ShardStub.await(stub.update(TensorCodec.frames(template, plain.get(), chunkBytes)), callTimeout);
        }
      }, connections.executor());
    }));
    return Calls.run(shards, calls, what, callTimeout, recoverer);
  }

  /** Subtracts from each array what sparse pushes of its variable have not sent yet (see {@link SparseTransfers}). */
  void subtractUnsent(Map<String, INDArray> arrays, Placement placement) {
    if (sparse == null) {
      return;
    }
    arrays.forEach((name, array) -> {
      ByteBuffer bytes = TensorCodec.bytes(array);
      for (Placement.Slice s : placement.slicesOf(name)) {
        sparse.subtractUnsent(name, s.offset(), TensorCodec.range(bytes, s.offset(), s.length()));
      }
    });
  }
}
