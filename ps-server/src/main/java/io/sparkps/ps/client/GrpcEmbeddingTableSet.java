package io.sparkps.ps.client;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.EmbeddingTableSet;
import io.sparkps.ps.bulk.BulkChannel;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.EmbeddingPullBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPullRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPushBatch;
import io.sparkps.ps.grpc.proto.EmbeddingPushRequest;
import io.sparkps.ps.grpc.proto.EmbeddingRowsBatch;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.wire.PackedArrays;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The gRPC client's {@link EmbeddingTableSet}: rows over each ps's bulk channel, or gRPC calls. */
final class GrpcEmbeddingTableSet implements EmbeddingTableSet {
  private final List<EmbeddingSpec> specs;
  private final List<ShardStub> shards;
  /** The shards' bulk channels, which carry the rows; null: gRPC calls carry them. */
  private final Connections bulk;
  private final int worker;
  private final Duration callTimeout;
  private final Duration waitTimeout;
  private final Recovery recovery;
  private final AtomicLong bytes;
  /** What calls name: the tables, quoted. */
  private final String names;
  /** Whether a table follows a consistency group (SYNC, SSP): its training pulls may wait, its pushes reach every ps. */
  private final boolean grouped;

  GrpcEmbeddingTableSet(List<EmbeddingSpec> specs, List<ShardStub> shards, Connections bulk, int worker,
      Duration callTimeout, Duration waitTimeout, Recovery recovery, AtomicLong bytes) {
    this.specs = List.copyOf(specs);
    this.shards = shards;
    this.bulk = bulk;
    this.worker = worker;
    this.callTimeout = callTimeout;
    this.waitTimeout = waitTimeout;
    this.recovery = recovery;
    this.bytes = bytes;
    this.names = specs.stream().map(s -> "'" + s.name() + "'").collect(Collectors.joining(", "));
    this.grouped = specs.stream().anyMatch(s -> !s.group().isEmpty());
  }

  @Override
  public List<EmbeddingSpec> specs() {
    return specs;
  }

  @Override
  public float[][] pull(long[][] ids, long step) {
    float[][] rows = rows(ids, step, true, "pull embedding rows");
    for (int t = 0; t < specs.size(); t++) {
      recovery.recordRows(specs.get(t), ids[t], rows[t], step);
    }
    return rows;
  }

  @Override
  public float[][] read(long[][] ids) {
    return rows(ids, 0, false, "read embedding rows");
  }

  @Override
  public void push(long[][] ids, float[][] gradients, long step) {
    checkCount(ids.length, "id arrays");
    checkCount(gradients.length, "gradient arrays");
    for (int t = 0; t < specs.size(); t++) {
      int dim = specs.get(t).dim();
      if (gradients[t].length != (long) ids[t].length * dim) {
        throw new IllegalArgumentException("embedding table '" + specs.get(t).name() + "': " + ids[t].length
            + " ids of dim " + dim + " need " + (long) ids[t].length * dim + " gradient values, got " + gradients[t].length);
      }
    }
    Placed placed = new Placed(ids, shards.size());
    Map<Integer, Function<ShardStub, CompletableFuture<UpdateReply>>> calls = new LinkedHashMap<>();
    for (int shard = 0; shard < shards.size(); shard++) {
      EmbeddingPushBatch.Builder batch = EmbeddingPushBatch.newBuilder();
      for (int t = 0; t < specs.size(); t++) {
        EmbeddingSpec spec = specs.get(t);
        if (placed.count(t, shard) == 0 && spec.group().isEmpty()) {
          continue;
        }
        batch.addTables(EmbeddingPushRequest.newBuilder().setTable(spec.name()).setStep(step).setWorker(worker)
            .setIds(PackedArrays.ofLongs(placed.ids(t, shard)))
            .setGradients(PackedArrays.ofFloats(placed.values(t, shard, gradients[t], spec.dim()))));
      }
      if (batch.getTablesCount() > 0) {
        EmbeddingPushBatch request = batch.build();
        bytes.addAndGet(request.getSerializedSize());
        calls.put(shard, call(shard, b -> b.pushRows(request), s -> s.pushEmbeddings(request), callTimeout));
      }
    }
    Calls.run(shards, calls, "push embedding gradients of " + names, callTimeout, recovery);
  }

  private float[][] rows(long[][] ids, long step, boolean train, String op) {
    checkCount(ids.length, "id arrays");
    Placed placed = new Placed(ids, shards.size());
    Map<Integer, Function<ShardStub, CompletableFuture<EmbeddingRowsBatch>>> calls = new LinkedHashMap<>();
    Map<Integer, List<Integer>> asked = new LinkedHashMap<>(); // per shard called, the tables it was asked for
    Duration bound = train && grouped ? waitTimeout.plus(callTimeout) : callTimeout;
    for (int shard = 0; shard < shards.size(); shard++) {
      EmbeddingPullBatch.Builder batch = EmbeddingPullBatch.newBuilder();
      List<Integer> tables = new ArrayList<>();
      for (int t = 0; t < specs.size(); t++) {
        if (placed.count(t, shard) > 0) {
          tables.add(t);
          batch.addTables(EmbeddingPullRequest.newBuilder().setTable(specs.get(t).name()).setStep(step)
              .setTrain(train).setWorker(worker).setTimeoutMs(waitTimeout.toMillis())
              .setIds(PackedArrays.ofLongs(placed.ids(t, shard))));
        }
      }
      if (!tables.isEmpty()) {
        EmbeddingPullBatch request = batch.build();
        bytes.addAndGet(request.getSerializedSize());
        calls.put(shard, call(shard, b -> b.pullRows(request), s -> s.pullEmbeddings(request), bound));
        asked.put(shard, tables);
      }
    }
    List<EmbeddingRowsBatch> replies = Calls.run(shards, calls, op + " of " + names, bound, recovery);
    float[][] out = new float[specs.size()][];
    for (int t = 0; t < specs.size(); t++) {
      out[t] = new float[ids[t].length * specs.get(t).dim()];
    }
    int reply = 0;
    for (Map.Entry<Integer, List<Integer>> e : asked.entrySet()) {
      EmbeddingRowsBatch rows = replies.get(reply++);
      bytes.addAndGet(rows.getSerializedSize());
      List<Integer> tables = e.getValue();
      if (rows.getTablesCount() != tables.size()) {
        throw new PsException("ps " + e.getKey() + " sent the rows of " + rows.getTablesCount() + " tables for "
            + tables.size() + " asked", null);
      }
      for (int k = 0; k < tables.size(); k++) {
        int t = tables.get(k);
        int dim = specs.get(t).dim();
        float[] values = PackedArrays.floats(rows.getTables(k).getValues(), "rows");
        if (values.length != placed.count(t, e.getKey()) * dim) {
          throw new PsException("embedding table '" + specs.get(t).name() + "': ps " + e.getKey() + " sent "
              + values.length + " floats for " + placed.count(t, e.getKey()) + " rows of dim " + dim, null);
        }
        placed.scatter(t, e.getKey(), values, out[t], dim);
      }
    }
    return out;
  }

  /**
   * A call to {@code shard}: over its bulk channel (through memory when it runs in this JVM, else
   * its bulk port), on the client's executor so that the shards' parts run in parallel; over gRPC
   * when it has none, or when the bulk port could not take the request before anything was sent.
   */
  private <T> Function<ShardStub, CompletableFuture<T>> call(int shard, Function<BulkChannel, T> overBulk,
      Function<ShardStub, CompletableFuture<T>> overGrpc, Duration bound) {
    if (bulk == null) {
      return overGrpc;
    }
    return stub -> CompletableFuture.supplyAsync(() -> {
      BulkChannel channel = bulk.bulk(shard);
      if (channel == null) {
        return ShardStub.await(overGrpc.apply(stub), bound);
      }
      try {
        return overBulk.apply(channel);
      } catch (RuntimeException e) {
        if (!BulkClient.mayTakeAnotherPath(e)) {
          throw e;
        }
        return ShardStub.await(overGrpc.apply(stub), bound); // nothing was sent: gRPC carries it
      }
    }, bulk.executor());
  }

  private void checkCount(int given, String what) {
    if (given != specs.size()) {
      throw new IllegalArgumentException("embedding tables " + names + ": " + given + " " + what + " for "
          + specs.size() + " tables (one per table, in the order of specs())");
    }
  }

  /** Each table's ids placed on the ps: the ps of each id, and how many of a table's ids each ps holds. */
  private static final class Placed {
    private final long[][] ids;
    private final int[][] shardOf;
    private final int[][] counts;

    Placed(long[][] ids, int shards) {
      this.ids = ids;
      this.shardOf = new int[ids.length][];
      this.counts = new int[ids.length][shards];
      for (int t = 0; t < ids.length; t++) {
        shardOf[t] = new int[ids[t].length];
        for (int i = 0; i < ids[t].length; i++) {
          shardOf[t][i] = EmbeddingTable.shardOf(ids[t][i], shards);
          counts[t][shardOf[t][i]]++;
        }
      }
    }

    int count(int t, int shard) {
      return counts[t][shard];
    }

    /** Table t's ids on {@code shard}, in the order they were given. */
    long[] ids(int t, int shard) {
      long[] part = new long[counts[t][shard]];
      int j = 0;
      for (int i = 0; i < ids[t].length; i++) {
        if (shardOf[t][i] == shard) {
          part[j++] = ids[t][i];
        }
      }
      return part;
    }

    /** The rows of {@code values} (row i for table t's id i) of the ids on {@code shard}, in their order. */
    float[] values(int t, int shard, float[] values, int dim) {
      float[] part = new float[counts[t][shard] * dim];
      int j = 0;
      for (int i = 0; i < ids[t].length; i++) {
        if (shardOf[t][i] == shard) {
          System.arraycopy(values, i * dim, part, j++ * dim, dim);
        }
      }
      return part;
    }

    /** Puts the rows {@code shard} sent for table t's ids back at those ids' places in {@code out}. */
    void scatter(int t, int shard, float[] rows, float[] out, int dim) {
      int j = 0;
      for (int i = 0; i < ids[t].length; i++) {
        if (shardOf[t][i] == shard) {
          System.arraycopy(rows, j++ * dim, out, i * dim, dim);
        }
      }
    }
  }
}
