package io.sparkps.ps.client;

import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.Placement;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.annotation.Internal;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A training worker's copy of the shards it pulled whole: for each such shard, the values of its
 * slices as of the worker's last pull and what recreates the shard's groups and slices (and its
 * embedding tables) on a replacement. A worker hands it on when its task ends early
 * ({@link GrpcPsClient#lastCopy()}), so that a worker of the next attempt on the same executor can
 * refill a shard lost meanwhile ({@link GrpcPsClient#refillLost(LastCopy, String)}).
 *
 * <p>It holds references to the arrays the worker pulled into, not copies: it is taken when no
 * pull writes into them any more (the worker's task has ended), and its arrays then outlive the
 * network they belonged to. Its size is one set of the network's parameters.
 */
@Internal
public final class LastCopy {
  /** One variable's copy: the array pulled into, at which step of the worker, the version read. */
  record Value(INDArray array, long step, long version) {}

  /**
   * A slice's optimizer state as the worker last read it ({@link PsClient#copyOptimizerState()}):
   * the optimizer's arrays over the slice's elements, the updates the state had taken in, and the
   * worker's step when it was read (older than the values: it is read now and then, not every step).
   */
  record State(float[][] arrays, long steps, long step) {}

  /** A table's rows as the worker last pulled them (its last minibatch's ids), at which step. */
  record Rows(long[] ids, float[] values, int dim, long step) {
    /** The rows of the ids that ps {@code shard} of {@code numShards} holds, as ids and values. */
    Rows on(int shard, int numShards) {
      int n = 0;
      long[] mine = new long[ids.length];
      float[] held = new float[values.length];
      for (int i = 0; i < ids.length; i++) {
        if (EmbeddingTable.shardOf(ids[i], numShards) == shard) {
          mine[n] = ids[i];
          System.arraycopy(values, i * dim, held, n * dim, dim);
          n++;
        }
      }
      return new Rows(java.util.Arrays.copyOf(mine, n), java.util.Arrays.copyOf(held, n * dim), dim, step);
    }
  }

  private final int worker;
  private final int numShards;
  private final Map<String, Value> values;
  private final Map<Integer, List<Placement.Slice>> slices;
  private final Map<Integer, CreateRequest> creates;
  private final Map<String, EmbeddingSpec> tables;
  private final TableRefill tableRefill;
  private final Set<String> cutOff;
  private final Map<String, Rows> rows;
  private final Map<Placement.Slice, State> states;

  LastCopy(int worker, int numShards, Map<String, Value> values, Map<Integer, List<Placement.Slice>> slices,
      Map<Integer, CreateRequest> creates, Map<String, EmbeddingSpec> tables, TableRefill tableRefill,
      Set<String> cutOff, Map<String, Rows> rows, Map<Placement.Slice, State> states) {
    this.states = Map.copyOf(states);
    this.cutOff = Set.copyOf(cutOff);
    this.rows = Map.copyOf(rows);
    this.worker = worker;
    this.numShards = numShards;
    this.values = Map.copyOf(values);
    this.slices = Map.copyOf(slices);
    this.creates = Map.copyOf(creates);
    this.tables = Map.copyOf(tables);
    this.tableRefill = tableRefill;
  }

  /** The worker whose copy this is. */
  public int worker() {
    return worker;
  }

  /** The shards of the run it was taken in. */
  public int numShards() {
    return numShards;
  }

  /** The shards it holds every slice of, ascending. */
  public Set<Integer> shards() {
    return new java.util.TreeSet<>(slices.keySet());
  }

  /** The oldest step at which a variable of it was pulled (a copy pulled in parts spans two steps). */
  public long oldestStep() {
    return values.values().stream().mapToLong(Value::step).min().orElse(0);
  }

  /** The newest step at which a variable of it was pulled. */
  public long newestStep() {
    return values.values().stream().mapToLong(Value::step).max().orElse(0);
  }

  /** Bytes of parameter values, optimizer state and table rows it keeps alive. */
  public long bytes() {
    return values.values().stream().mapToLong(v -> v.array().length() * v.array().dataType().width()).sum()
        + states.values().stream().flatMap(st -> java.util.Arrays.stream(st.arrays())).mapToLong(a -> a.length * 4L)
            .sum()
        + rows.values().stream().mapToLong(r -> r.values().length * 4L + r.ids().length * 8L).sum();
  }

  /** The optimizer state of {@code slice} as the worker last read it, or null when it holds none. */
  State stateOf(Placement.Slice slice) {
    return states.get(slice);
  }

  /** Each embedding table's rows as the worker last pulled them. */
  Map<String, Rows> rows() {
    return rows;
  }

  /**
   * The variables whose pull was cut off (the task ended during it): their arrays hold values of
   * their last complete pull, some overwritten by the next one's (elementwise either is a state the
   * worker trained from; for ASYNC training a refill from them is as good as any).
   */
  public Set<String> cutOff() {
    return cutOff;
  }

  /** "step 42" or "steps 41-42", and the variables whose next pull was cut off, if any. */
  String steps() {
    return steps(oldestStep(), newestStep(), cutOff);
  }

  /** "step 42" or "steps 41-42" (a copy pulled in parts), then the {@code torn} variables, if any. */
  static String steps(long oldest, long newest, Set<String> torn) {
    return (oldest == newest ? "step " + oldest : "steps " + oldest + "-" + newest)
        + (torn.isEmpty() ? "" : " (" + new java.util.TreeSet<>(torn) + " partly of the next: its pull was cut off)");
  }

  Map<String, Value> values() {
    return values;
  }

  List<Placement.Slice> slicesOn(int shard) {
    return slices.getOrDefault(shard, List.of());
  }

  CreateRequest createRequest(int shard) {
    return creates.get(shard);
  }

  Map<String, EmbeddingSpec> tables() {
    return tables;
  }

  TableRefill tableRefill() {
    return tableRefill;
  }

  @Override
  public String toString() {
    return "worker " + worker + "'s copy of " + steps() + " (ps " + shards() + ", " + bytes() + " bytes)";
  }
}
