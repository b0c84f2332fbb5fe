package io.sparkps.ps;

import io.sparkps.ps.grpc.ShardStub;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client's embedding tables: creates each on every shard and hands out its {@link EmbeddingTable},
 * tells the client's {@link Recovery} which tables a replaced shard needs back and from where, and
 * counts the payload bytes of every table call.
 */
final class TableHandles {
  private final List<ShardStub> shards;
  private final int worker;
  private final Duration callTimeout;
  private final Duration waitTimeout;
  private final Recovery recovery;
  private final AtomicLong bytes = new AtomicLong();

  TableHandles(List<ShardStub> shards, int worker, Duration callTimeout, Duration waitTimeout, Recovery recovery) {
    this.shards = shards;
    this.worker = worker;
    this.callTimeout = callTimeout;
    this.waitTimeout = waitTimeout;
    this.recovery = recovery;
  }

  /** Creates {@code spec} on every shard (the same spec again is kept) and returns a handle on it. */
  EmbeddingTable open(EmbeddingSpec spec) {
    Calls.all(shards, "create embedding table '" + spec.name() + "'", s -> s.createEmbedding(spec.proto()),
        callTimeout, recovery);
    recovery.tableCreated(spec);
    return new EmbeddingTable(spec, shards, worker, callTimeout, waitTimeout, recovery, bytes);
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
