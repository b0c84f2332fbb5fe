package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.PsError;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The embedding tables of one ps, by name: each its {@link EmbeddingShard} behind a lock of its
 * own, so calls on different tables run side by side and calls on one table one at a time.
 */
public final class EmbeddingTables {
  private final int shard;
  private final Map<String, Table> tables = new ConcurrentHashMap<>();

  /** A table's spec and this ps's rows of it (callers hold the rows' lock while they use them). */
  record Table(EmbeddingSpecProto spec, EmbeddingShard rows) {}

  /** The tables of ps {@code shard}. */
  public EmbeddingTables(int shard) {
    this.shard = shard;
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
    tables.put(spec.getName(), new Table(spec, rows));
  }

  /** Creates the table of {@code spec}; true when new, false when it exists with this spec (a retry, another worker). */
  public boolean create(EmbeddingSpecProto spec) {
    boolean[] created = {false};
    Table table = tables.computeIfAbsent(spec.getName(), name -> {
      created[0] = true;
      return new Table(spec, newRows(spec));
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

  /** Applies {@code gradients} of {@code ids}; see {@link EmbeddingShard#push}. */
  public void push(String name, long[] ids, float[] gradients, long step) {
    EmbeddingShard rows = table(name).rows();
    if (gradients.length != (long) ids.length * rows.dim()) {
      throw PsError.invalid("embedding table '" + name + "': " + ids.length + " ids of dim "
          + rows.dim() + " need " + (long) ids.length * rows.dim() + " gradient values, got " + gradients.length);
    }
    synchronized (rows) {
      rows.push(ids, gradients, step);
    }
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
    String kind = s.getOptimizer();
    try {
      return switch (RowRule.Kind.valueOf(kind)) {
        case SGD -> RowRule.sgd(s.getLearningRate());
        case ADAGRAD -> RowRule.adaGrad(s.getLearningRate(), s.getEpsilon());
        case ROWWISE_ADAGRAD -> RowRule.rowwiseAdaGrad(s.getLearningRate(), s.getEpsilon());
        case LAZY_ADAM -> RowRule.lazyAdam(s.getLearningRate(), s.getBeta1(), s.getBeta2(), s.getEpsilon());
        case FTRL -> RowRule.ftrl(s.getLearningRate(), s.getFtrlBeta(), s.getL1(), s.getL2());
      };
    } catch (IllegalArgumentException e) {
      throw PsError.invalid("embedding table '" + s.getName() + "': " + e.getMessage()
          + " (optimizer '" + kind + "'; one of SGD, ADAGRAD, ROWWISE_ADAGRAD, LAZY_ADAM, FTRL)");
    }
  }
}
