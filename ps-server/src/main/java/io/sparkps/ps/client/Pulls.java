package io.sparkps.ps.client;

import io.sparkps.ps.Placement;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.bulk.BulkChannel;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.Frame;
import io.sparkps.ps.grpc.FrameMarshaller;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.spec.VariableSpec;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The reading half of {@link PsClient}: asks each shard for its slices of a pull, in parallel, and
 * reads the frames that come back straight into the destination arrays (over the shard's bulk port
 * when its part is large, else over gRPC). {@link Transfers} is the writing half.
 */
final class Pulls {
  private final List<ShardStub> shards;
  private final Connections connections;
  private final Predicate<String> mayWait;
  private final int worker;
  private final Duration callTimeout;
  private final Duration waitTimeout;
  private final Calls.Recoverer recoverer;
  /** Sparse pulls (null: dense). */
  private final SparseTransfers sparse;
  /** Reads from one shard of fewer bytes go as gRPC calls (see {@link Transfers}). */
  private final long bulkMinBytes;

  Pulls(Connections connections, Predicate<String> mayWait, int worker, Duration callTimeout, Duration waitTimeout,
      Calls.Recoverer recoverer, SparseTransfers sparse, long bulkMinBytes) {
    this.bulkMinBytes = bulkMinBytes;
    this.connections = connections;
    this.shards = connections.stubs();
    this.mayWait = mayWait;
    this.worker = worker;
    this.callTimeout = callTimeout;
    this.waitTimeout = waitTimeout;
    this.recoverer = recoverer;
    this.sparse = sparse;
  }

  /** Pulls whole variables into {@code destinations}; returns the lowest slice version read. */
  long pullDense(Map<String, INDArray> destinations, Placement placement, long clock, boolean noWait) {
    return pullDense(destinations, placement, clock, noWait, false);
  }

  /**
   * As above; with {@code mayBeSparse} and sparse transfers on, a destination that holds what the
   * last such pull put there receives only what moved most since.
   */
  long pullDense(Map<String, INDArray> destinations, Placement placement, long clock, boolean noWait,
      boolean mayBeSparse) {
    boolean sparsePull = mayBeSparse && sparse != null;
    Map<Integer, PullRequest.Builder> requests = new LinkedHashMap<>();
    Map<String, ByteBuffer> targets = new LinkedHashMap<>();
    Map<Integer, Long> bytes = new LinkedHashMap<>();
    destinations.forEach((name, array) -> {
      if (!TensorCodec.isDenseFloat(array)) {
        throw new IllegalArgumentException("pull destination for '" + name + "' must be float32 in 'c' order "
            + "without gaps; got " + array.dataType() + " order " + array.ordering());
      }
      targets.put(name, TensorCodec.bytes(array));
      long address = array.data().address() + 4 * array.offset();
      for (Placement.Slice s : placement.slicesOf(name)) {
        PullItem.Builder item = PullItem.newBuilder().setName(name);
        if (sparsePull) {
          item.setKnownGeneration(sparse.knownGeneration(name, s.offset(), address));
        }
        request(requests, s.shard(), clock).addItems(item);
        bytes.merge(s.shard(), 4 * s.length(), Long::sum);
      }
    });
    return readInto(requests, bytes, seg -> {
      if (seg.getGeneration() != 0) {
        sparse.received(seg.getName(), seg.getOffset(), seg.getGeneration());
      }
      return TensorCodec.range(targets.get(seg.getName()), seg.getOffset(), seg.getCount());
    }, noWait, sparsePull);
  }

  INDArray pullRange(VariableSpec spec, List<Placement.Slice> slices, long rowStart, long rowEnd, long clock) {
    long[] shape = spec.shape();
    shape[0] = rowEnd - rowStart;
    INDArray out = Nd4j.create(DataType.FLOAT, shape, 'c');
    ByteBuffer target = TensorCodec.bytes(out);
    long base = rowStart * spec.rowLength();
    Map<Integer, PullRequest.Builder> requests = new LinkedHashMap<>();
    Map<Integer, Long> bytes = new LinkedHashMap<>();
    for (Placement.Slice s : slices) {
      long from = Math.max(rowStart, s.rowStart());
      long to = Math.min(rowEnd, s.rowEnd());
      if (from < to) {
        request(requests, s.shard(), clock).addItems(PullItem.newBuilder().setName(spec.name())
            .setRowStart(from).setRowEnd(to));
        bytes.merge(s.shard(), 4 * (to - from) * spec.rowLength(), Long::sum);
      }
    }
    readInto(requests, bytes, seg -> TensorCodec.range(target, seg.getOffset() - base, seg.getCount()), false, false);
    return out;
  }

  INDArray pullRows(VariableSpec spec, List<Placement.Slice> slices, long[] rows, long clock) {
    long[] shape = spec.shape();
    shape[0] = rows.length;
    INDArray out = Nd4j.create(DataType.FLOAT, shape, 'c');
    ByteBuffer target = TensorCodec.bytes(out);
    int rowLen = (int) spec.rowLength();
    Map<Integer, PullRequest.Builder> requests = new LinkedHashMap<>();
    Map<Integer, List<Integer>> positions = new LinkedHashMap<>();
    for (int k = 0; k < rows.length; k++) {
      for (Placement.Slice s : slices) {
        if (rows[k] >= s.rowStart() && rows[k] < s.rowEnd()) {
          positions.computeIfAbsent(s.shard(), x -> new ArrayList<>()).add(k);
        }
      }
    }
    positions.forEach((shard, ks) -> request(requests, shard, clock).addItems(PullItem.newBuilder()
        .setName(spec.name()).addAllRows(ks.stream().map(k -> rows[k]).toList())));
    pull(requests, false, shard -> {
      int[] cursor = {0};
      return (header, payload, bytes) -> {
        for (Segment seg : header.getSegmentsList()) {
          for (int i = 0; i < seg.getRowsCount(); i++) {
            int k = positions.get(shard).get(cursor[0]++);
            payload.readBytes(TensorCodec.range(target, (long) k * rowLen, rowLen));
          }
        }
        return Frame.received(header, null, 0);
      };
    });
    return out;
  }

  /**
   * Reads dense items into the buffers {@code target} gives for each segment, over the bulk port
   * (where a SYNC or SSP read waits on the shard, in the same request), else over gRPC. Returns
   * the lowest slice version read.
   */
  private long readInto(Map<Integer, PullRequest.Builder> requests, Map<Integer, Long> bytesPerShard,
      Function<Segment, ByteBuffer> target, boolean noWait, boolean sparsePull) {
    Duration wait = noWait ? Duration.ZERO : waitTimeout;
    AtomicLong minVersion = new AtomicLong(Long.MAX_VALUE);
    Function<Segment, ByteBuffer> tracked = seg -> {
      minVersion.accumulateAndGet(seg.getVersion(), Math::min);
      return target.apply(seg);
    };
    FrameMarshaller.Sink sink = (header, payload, bytes) -> {
      for (Segment seg : header.getSegmentsList()) {
        payload.readBytes(tracked.apply(seg));
      }
      return Frame.received(header, null, 0);
    };
    Map<Integer, Function<ShardStub, CompletableFuture<Object>>> calls = new LinkedHashMap<>();
    requests.forEach((shard, builder) -> {
      PullRequest request = builder.build();
      if (bytesPerShard.getOrDefault(shard, 0L) < bulkMinBytes && !connections.sameJvm(shard) && !sparsePull) {
        calls.put(shard, stub -> stub.pull(request, sink, wait).thenApply(f -> f));
        return;
      }
      // A read that may wait does so on the shard, in the same request; one that may not carries
      // no wait, so its connection's deadline stays the call's timeout (a frozen shard is found as soon).
      boolean mayBlock = !noWait && request.getItemsList().stream().anyMatch(i -> mayWait.test(i.getName()));
      PullRequest.Builder bulkBuilder = request.toBuilder().setTimeoutMs(mayBlock ? wait.toMillis() : 0);
      if (sparsePull) {
        bulkBuilder.setEncoding(io.sparkps.ps.grpc.proto.WireEncoding.SPARSE).setDensity(sparse.pullDensity());
      }
      PullRequest bulkRequest = bulkBuilder.build();
      calls.put(shard, stub -> CompletableFuture.supplyAsync(() -> {
        BulkChannel bulk = connections.bulk(shard);
        if (bulk == null) {
          return ShardStub.await(stub.pull(request, sink, wait), wait.plus(callTimeout));
        }
        try {
          return bulk.read(bulkRequest, tracked);
        } catch (RuntimeException e) {
          if (!BulkClient.mayTakeAnotherPath(e)) {
            throw e;
          }
          return ShardStub.await(stub.pull(request, sink, wait), wait.plus(callTimeout)); // as for updates
        }
      }, connections.executor()));
    });
    Calls.run(shards, calls, "pull", wait.plus(callTimeout), recoverer);
    return minVersion.get() == Long.MAX_VALUE ? 0 : minVersion.get();
  }

  private PullRequest.Builder request(Map<Integer, PullRequest.Builder> requests, int shard, long clock) {
    return requests.computeIfAbsent(shard, s -> PullRequest.newBuilder().setWorker(worker).setClock(clock)
        .setTimeoutMs(waitTimeout.toMillis()));
  }

  private void pull(Map<Integer, PullRequest.Builder> requests, boolean noWait,
      java.util.function.IntFunction<FrameMarshaller.Sink> sinkPerShard) {
    Duration wait = noWait ? Duration.ZERO : waitTimeout;
    Map<Integer, Function<ShardStub, CompletableFuture<Frame>>> calls = new LinkedHashMap<>();
    requests.forEach((shard, request) ->
        calls.put(shard, stub -> stub.pull(request.build(), sinkPerShard.apply(shard), wait)));
    Calls.run(shards, calls, "pull", wait.plus(callTimeout), recoverer);
  }
}
