package io.sparkps.ps;

import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.EmbeddingPullRequest;
import io.sparkps.ps.grpc.proto.EmbeddingPushRequest;
import io.sparkps.ps.grpc.proto.EmbeddingRows;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.wire.Ids;
import io.sparkps.ps.wire.PackedArrays;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * A client's handle on an embedding table ({@link PsClient#embeddingTable}): pulls the rows of a
 * minibatch's ids and pushes their gradients, each id to the ps its hash places it on, the ps in
 * parallel. Only the ids asked for travel, so bytes per step scale with the ids a step touches,
 * not with the table. Pass each id once per call (a minibatch's unique ids, gradients summed).
 * Thread-safe as its client is; closing the client ends it.
 */
public final class EmbeddingTable {
  private final EmbeddingSpec spec;
  private final List<ShardStub> shards;
  private final Duration callTimeout;
  private final Duration waitTimeout;
  private final int worker;
  private final Recovery recovery;
  private final java.util.concurrent.atomic.AtomicLong bytes;

  EmbeddingTable(EmbeddingSpec spec, List<ShardStub> shards, int worker, Duration callTimeout, Duration waitTimeout,
      Recovery recovery, java.util.concurrent.atomic.AtomicLong bytes) {
    this.bytes = bytes;
    this.spec = spec;
    this.shards = shards;
    this.worker = worker;
    this.callTimeout = callTimeout;
    this.waitTimeout = waitTimeout;
    this.recovery = recovery;
  }

  /** The table's spec. */
  public EmbeddingSpec spec() {
    return spec;
  }

  /** The ps that holds {@code id}'s row, of {@code numShards}: a hash of the id, so neighbouring ids spread. */
  public static int shardOf(long id, int numShards) {
    return Ids.shardOf(id, numShards);
  }

  /**
   * The rows of {@code ids} for training step {@code step}, row after row ({@code ids.length * dim}
   * floats): an id seen often enough gets a row of its own, one not admitted yet reads the default row.
   * For a SYNC table it waits until every worker's step {@code step - 1} is applied (SSP: until the
   * slowest is within the staleness), at most the client's wait timeout.
   */
  public float[] pull(long[] ids, long step) {
    float[] rows = rows(ids, step, true, "pull embedding rows");
    recovery.recordRows(spec, ids, rows, step);
    return rows;
  }

  /** The rows of {@code ids} without creating any (inference): an id the table does not hold reads the default row. */
  public float[] read(long[] ids) {
    return rows(ids, 0, false, "read embedding rows");
  }

  /**
   * Applies {@code gradients} ({@code ids.length * dim} floats, row after row) to the rows of
   * {@code ids}: at once, or for a SYNC table with the other workers' of step {@code step} (their
   * mean, once every worker pushed the step; a SYNC or SSP push goes to every ps, empty where it
   * holds none of the ids, so each ps knows the worker's step is done).
   */
  public void push(long[] ids, float[] gradients, long step) {
    int dim = spec.dim();
    if (gradients.length != (long) ids.length * dim) {
      throw new IllegalArgumentException("embedding table '" + spec.name() + "': " + ids.length + " ids of dim " + dim
          + " need " + (long) ids.length * dim + " gradient values, got " + gradients.length);
    }
    Split split = split(ids);
    if (!spec.group().isEmpty()) {
      for (int shard = 0; shard < shards.size(); shard++) {
        split.positions.putIfAbsent(shard, List.of());
      }
    }
    Map<Integer, Function<ShardStub, CompletableFuture<UpdateReply>>> calls = new LinkedHashMap<>();
    split.positions.forEach((shard, at) -> {
      long[] part = new long[at.size()];
      float[] partGradients = new float[at.size() * dim];
      for (int j = 0; j < part.length; j++) {
        part[j] = ids[at.get(j)];
        System.arraycopy(gradients, at.get(j) * dim, partGradients, j * dim, dim);
      }
      EmbeddingPushRequest request = EmbeddingPushRequest.newBuilder().setTable(spec.name()).setStep(step)
          .setWorker(worker).setIds(PackedArrays.ofLongs(part)).setGradients(PackedArrays.ofFloats(partGradients))
          .build();
      bytes.addAndGet(request.getSerializedSize());
      calls.put(shard, s -> s.pushEmbedding(request));
    });
    Calls.run(shards, calls, "push embedding gradients of '" + spec.name() + "'", callTimeout, recovery);
  }

  private float[] rows(long[] ids, long step, boolean train, String op) {
    int dim = spec.dim();
    Split split = split(ids);
    Map<Integer, Function<ShardStub, CompletableFuture<EmbeddingRows>>> calls = new LinkedHashMap<>();
    split.positions.forEach((shard, at) -> {
      long[] part = at.stream().mapToLong(i -> ids[i]).toArray();
      EmbeddingPullRequest request = EmbeddingPullRequest.newBuilder().setTable(spec.name()).setStep(step)
          .setTrain(train).setWorker(worker).setTimeoutMs(waitTimeout.toMillis()).setIds(PackedArrays.ofLongs(part))
          .build();
      bytes.addAndGet(request.getSerializedSize());
      calls.put(shard, s -> s.pullEmbedding(request));
    });
    Duration bound = train && !spec.group().isEmpty() ? waitTimeout.plus(callTimeout) : callTimeout;
    List<EmbeddingRows> replies = Calls.run(shards, calls, op + " of '" + spec.name() + "'", bound, recovery);
    float[] out = new float[ids.length * dim];
    int part = 0;
    for (List<Integer> at : split.positions.values()) {
      bytes.addAndGet(replies.get(part).getSerializedSize());
      float[] rows = PackedArrays.floats(replies.get(part++).getValues(), "rows");
      if (rows.length != at.size() * dim) {
        throw new PsException("embedding table '" + spec.name() + "': a ps sent " + rows.length + " floats for "
            + at.size() + " rows of dim " + dim, null);
      }
      for (int j = 0; j < at.size(); j++) {
        System.arraycopy(rows, j * dim, out, at.get(j) * dim, dim);
      }
    }
    return out;
  }

  /** The positions in {@code ids} of each shard's ids, shards in ascending order. */
  private record Split(Map<Integer, List<Integer>> positions) {}

  private Split split(long[] ids) {
    Map<Integer, List<Integer>> positions = new java.util.TreeMap<>();
    for (int i = 0; i < ids.length; i++) {
      positions.computeIfAbsent(shardOf(ids[i], shards.size()), s -> new ArrayList<>()).add(i);
    }
    return new Split(positions);
  }
}
