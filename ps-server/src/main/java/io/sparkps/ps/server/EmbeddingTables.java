package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Optimizer;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PsError;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The embedding tables of one ps, by name: each its {@link EmbeddingShard} behind a lock of its
 * own, so calls on different tables run side by side and calls on one table one at a time.
 */
@Internal
public final class EmbeddingTables {
  /** Told when a pull's catch-up applied a SYNC step; must not re-check waits on the caller's thread. */
  private volatile Runnable stepApplied = () -> {};
  private final int shard;
  private final java.util.function.Function<String, GroupSpec> groups;
  private final Map<String, Table> tables = new ConcurrentHashMap<>();

  /**
   * A table's spec, this ps's rows of it and, for a SYNC or SSP group, its consistency (callers
   * hold the rows' lock while they use either).
   */
  record Table(EmbeddingSpecProto spec, EmbeddingShard rows, TableSync sync) {}

  /** The tables of ps {@code shard}, which knows no consistency groups: every table is ASYNC. */
  public EmbeddingTables(int shard) {
    this(shard, name -> null);
  }

  /** The tables of ps {@code shard}; a table's group is looked up in {@code groups} (null: none of that name). */
  public EmbeddingTables(int shard, java.util.function.Function<String, GroupSpec> groups) {
    this.shard = shard;
    this.groups = groups;
  }

  private TableSync sync(EmbeddingSpecProto spec) {
    if (spec.getGroup().isEmpty()) {
      return null;
    }
    GroupSpec group = groups.apply(spec.getGroup());
    if (group == null) {
      throw PsError.notFound("embedding table '" + spec.getName() + "' names group '" + spec.getGroup()
          + "', which does not exist on ps " + shard + ": create the group first (PsClient.createGroup)");
    }
    return group.getMode() == ConsistencyMode.ASYNC ? null : new TableSync(spec.getName(), shard, group);
  }

  /** The ps these tables are on. */
  int shard() {
    return shard;
  }

  /** The tables, by name. */
  java.util.List<Table> all() {
    return java.util.List.copyOf(new java.util.TreeMap<>(tables).values());
  }

  /** Empty rows for {@code spec} on this ps (not yet one of its tables: see {@link #replace}). */
  EmbeddingShard newRows(EmbeddingSpecProto spec) {
    try {
      return new EmbeddingShard(spec.getName(), shard, spec.getDim(), rule(spec), spec.getMaxRowsPerShard(),
          spec.getEvictAfterSteps(), spec.getMinCount(), spec.getSeed(), spec.getInitScale());
    } catch (IllegalArgumentException e) {
      throw PsError.invalid(e.getMessage());
    }
  }

  /** Makes {@code rows} the table of {@code spec}, replacing any table of its name (a restore). */
  void replace(EmbeddingSpecProto spec, EmbeddingShard rows) {
    TableSync sync = sync(spec);
    tables.put(spec.getName(), new Table(spec, rows, sync == null ? null : sync.restored()));
  }

  /** Creates the table of {@code spec}; true when new, false when it exists with this spec (a retry, another worker). */
  public boolean create(EmbeddingSpecProto spec) {
    boolean[] created = {false};
    Table table = tables.computeIfAbsent(spec.getName(), name -> {
      created[0] = true;
      return new Table(spec, newRows(spec), sync(spec));
    });
    if (!table.spec().equals(spec)) {
      throw PsError.conflict("embedding table '" + spec.getName() + "' exists on ps " + shard
          + " with another spec: " + table.spec().toString().replace('\n', ' ') + "; asked for "
          + spec.toString().replace('\n', ' '));
    }
    return created[0];
  }

  /** The rows of {@code ids} into a new array ({@code ids.length * dim}); see {@link EmbeddingShard#pull}. */
  public float[] pull(String name, long[] ids, long step, boolean train) {
    EmbeddingShard rows = table(name).rows();
    float[] out = new float[ids.length * rows.dim()];
    synchronized (rows) {
      if (train) {
        rows.pull(ids, out, step);
      } else {
        rows.read(ids, out);
      }
    }
    return out;
  }

  /** Applies {@code gradients} of {@code ids} at once (an ASYNC table); see {@link #push(String, int, long[], float[], long)}. */
  public void push(String name, long[] ids, float[] gradients, long step) {
    push(name, 0, ids, gradients, step);
  }

  /** Sets the rows of {@code ids} of table {@code name} to {@code values} (a refill; see {@link EmbeddingShard#assign}). */
  public void assign(String name, long[] ids, float[] values, long step) {
    EmbeddingShard rows = table(name).rows();
    checkRows(name, rows, ids, values, "row values");
    synchronized (rows) {
      rows.assign(ids, values, step);
    }
  }

  /**
   * Refuses a push (or with {@code assign}, a refill) of {@code values} to table {@code name}, as
   * {@link #push} ({@link #assign}) would, without applying it.
   */
  public void check(String name, long[] ids, float[] values, boolean assign) {
    checkRows(name, table(name).rows(), ids, values, assign ? "row values" : "gradient values");
  }

  /** Refuses {@code values} that are not a row of the table's dim for each of {@code ids}. */
  private static void checkRows(String name, EmbeddingShard rows, long[] ids, float[] values, String what) {
    if (values.length != (long) ids.length * rows.dim()) {
      throw PsError.invalid("embedding table '" + name + "': " + ids.length + " ids of dim "
          + rows.dim() + " need " + (long) ids.length * rows.dim() + " " + what + ", got " + values.length);
    }
  }

  /**
   * Takes worker {@code worker}'s {@code gradients} of {@code ids} for step {@code step}: applied
   * at once (ASYNC, SSP) or with the other workers' of the step (SYNC, see {@link TableSync}); see
   * {@link EmbeddingShard#push}.
   */
  public void push(String name, int worker, long[] ids, float[] gradients, long step) {
    Table table = table(name);
    EmbeddingShard rows = table.rows();
    checkRows(name, rows, ids, gradients, "gradient values");
    synchronized (rows) {
      if (table.sync() == null) {
        rows.push(ids, gradients, step);
        return;
      }
      // On a restored table a push of step n may follow the pusher's pull of n from the ps this one
      // replaced: what that pull implies is taken first, as a pull here would (TableSync#catchUp).
      if (table.sync().pushCatchesUp()) {
        catchUp(table.sync(), rows, worker, step);
      }
      TableSync.Apply apply = table.sync().push(worker, ids, gradients, step, rows.dim());
      if (apply != null) {
        rows.push(apply.ids(), apply.gradients(), step);
      }
    }
  }

  private void catchUp(TableSync sync, EmbeddingShard rows, int worker, long step) {
    TableSync.Apply caught = sync.catchUp(worker, step, rows.dim());
    if (caught != null) {
      rows.push(caught.ids(), caught.gradients(), step - 1);
      stepApplied.run();
    }
  }

  /**
   * Null when worker {@code worker} may pull its rows of table {@code name} for training step
   * {@code step} now (always, for an ASYNC table), else what it waits for.
   */
  public String blocker(String name, int worker, long step) {
    Table table = table(name);
    if (table.sync() == null) {
      return null;
    }
    EmbeddingShard rows = table.rows();
    synchronized (rows) {
      catchUp(table.sync(), rows, worker, step);
      return table.sync().blocker(worker, step);
    }
  }

  /** Runs {@code hook} when a pull completes a SYNC step (see {@link TableSync#catchUp}): other pulls may go on. */
  public void onStepApplied(Runnable hook) {
    stepApplied = hook;
  }

  /** Rows held by table {@code name} on this ps, its default row not counted. */
  public int size(String name) {
    EmbeddingShard rows = table(name).rows();
    synchronized (rows) {
      return rows.size();
    }
  }

  private Table table(String name) {
    Table table = tables.get(name);
    if (table == null) {
      throw PsError.notFound("embedding table '" + name + "' does not exist on ps " + shard
          + " (tables here: " + tables.keySet() + "); create it first");
    }
    return table;
  }

  static RowRule rule(EmbeddingSpecProto s) {
    try {
      return switch (Optimizer.ofTable(s.getOptimizer())) {
        case SGD -> RowRule.sgd(s.getLearningRate());
        case ADAGRAD -> RowRule.adaGrad(s.getLearningRate(), s.getEpsilon());
        case ROWWISE_ADAGRAD -> RowRule.rowwiseAdaGrad(s.getLearningRate(), s.getEpsilon());
        case LAZY_ADAM -> RowRule.lazyAdam(s.getLearningRate(), s.getBeta1(), s.getBeta2(), s.getEpsilon());
        case FTRL -> RowRule.ftrl(s.getLearningRate(), s.getFtrlBeta(), s.getL1(), s.getL2());
        case MOMENTUM, NESTEROV, ADAM, RMSPROP, NO_OP -> throw new IllegalStateException("ofTable refuses "
            + s.getOptimizer());
      };
    } catch (IllegalArgumentException e) {
      throw PsError.invalid("embedding table '" + s.getName() + "': " + e.getMessage());
    }
  }
}
