package io.sparkps.ps.client;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.EmbeddingTableSet;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.wire.ProtoConvert;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client's embedding tables: creates each on every shard and hands out its {@link EmbeddingTable} (or a
 * {@link EmbeddingTableSet} of several),
 * tells the client's {@link Recovery} which tables a replaced shard needs back and from where, and
 * counts the payload bytes of every table call.
 */
final class TableHandles {
  private final List<ShardStub> shards;
  private final Connections bulk;
  private final int worker;
  private final Duration callTimeout;
  private final Duration waitTimeout;
  private final Recovery recovery;
  private final AtomicLong bytes = new AtomicLong();

  /**
   * Handles on {@code shards}' tables; their rows travel over the shards' bulk channels from
   * {@code bulk}, or over gRPC calls when it is null.
   */
  TableHandles(List<ShardStub> shards, Connections bulk, int worker, Duration callTimeout, Duration waitTimeout,
      Recovery recovery) {
    this.shards = shards;
    this.bulk = bulk;
    this.worker = worker;
    this.callTimeout = callTimeout;
    this.waitTimeout = waitTimeout;
    this.recovery = recovery;
  }

  /** Creates {@code spec} on every shard (the same spec again is kept) and returns a handle on it. */
  EmbeddingTable open(EmbeddingSpec spec) {
    return new OneTable(openAll(List.of(spec)));
  }

  /** Creates each of {@code specs} on every shard and returns a handle that pulls and pushes them together. */
  EmbeddingTableSet openAll(List<EmbeddingSpec> specs) {
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("no embedding tables to open: pass at least one spec");
    }
    java.util.Set<String> names = new java.util.HashSet<>();
    for (EmbeddingSpec spec : specs) {
      if (!names.add(spec.name())) {
        throw new IllegalArgumentException("embedding table '" + spec.name() + "' is named twice: each table once");
      }
      Calls.all(shards, "create embedding table '" + spec.name() + "'", s -> s.createEmbedding(ProtoConvert.toProto(spec)),
          callTimeout, recovery);
      recovery.tableCreated(spec);
    }
    return new GrpcEmbeddingTableSet(specs, shards, bulk, worker, callTimeout, waitTimeout, recovery, bytes);
  }

  /** Where a replaced shard's share of the tables comes back from. */
  void refillFrom(TableRefill refill) {
    recovery.tableRefill(refill);
  }

  /** Payload bytes of every table call so far. */
  long bytes() {
    return bytes.get();
  }
}
