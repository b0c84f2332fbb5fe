package io.sparkps.ml.param;

import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Optimizer;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.core.type.TypeReference;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * How one categorical column becomes input of the network: each row's id (or ids, for an array
 * column, pooled by sum or mean) looks up a row of {@code dim} floats in an embedding table on the
 * parameter servers. Ids are strings or whole numbers; they are either hashed into {@code buckets}
 * rows or, with no buckets (the default), each distinct id gets a row of its own as it arrives.
 *
 * <p>What ids mean: a missing value (null, or an empty or all-null array) reads the column's own
 * "missing" row, learned like any other; an id the table has not admitted (seen fewer than
 * {@code minCount} times) or, when scoring, never saw, reads the table's default row. Neither is ever
 * an error. Immutable; {@link #of} makes one, the {@code with} methods copies.
 */
public final class EmbeddingColumn implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  /** How an array column's rows are combined. */
  public enum Pooling {
    /** The sum of the ids' rows. */
    SUM,
    /** Their mean. */
    MEAN
  }

  private final String column;
  private final int dim;
  private final long buckets;
  private final Optimizer optimizer;
  private final double learningRate;
  private final Pooling pooling;
  private final int minCount;
  private final long evictAfterSteps;
  private final int maxRowsPerShard;
  private final double initScale;

  private EmbeddingColumn(String column, int dim, long buckets, Optimizer optimizer, double learningRate,
      Pooling pooling,
      int minCount, long evictAfterSteps, int maxRowsPerShard, double initScale) {
    this.column = column;
    this.dim = dim;
    this.buckets = buckets;
    this.optimizer = optimizer;
    this.learningRate = learningRate;
    this.pooling = pooling;
    this.minCount = minCount;
    this.evictAfterSteps = evictAfterSteps;
    this.maxRowsPerShard = maxRowsPerShard;
    this.initScale = initScale;
    check();
  }

  /**
   * Column {@code column} as rows of {@code dim} floats: dynamic ids, row-wise AdaGrad at 0.05, sum
   * pooling, every id admitted, no eviction, 1,000,000 rows per ps at most, rows initialized in +-0.01.
   */
  public static EmbeddingColumn of(String column, int dim) {
    return new EmbeddingColumn(column, dim, 0, EmbeddingSpec.DEFAULT_OPTIMIZER, 0.05, Pooling.SUM, 1, 0, 1_000_000,
        0.01);
  }

  /** Hashes the ids into {@code buckets} rows (plus one for missing values); 0: a row per distinct id. */
  public EmbeddingColumn withBuckets(long buckets) {
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps,
        maxRowsPerShard, initScale);
  }

  /** The table's optimizer (state per row, made on first touch) and its learning rate. */
  public EmbeddingColumn withOptimizer(Optimizer optimizer, double learningRate) {
    try {
      optimizer.checkedForTables();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("embedding column '" + column + "': " + e.getMessage(), e);
    }
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps,
        maxRowsPerShard, initScale);
  }

  /** As above, by the optimizer's name in any case ({@link Optimizer}). */
  public EmbeddingColumn withOptimizer(String optimizer, double learningRate) {
    return withOptimizer(optimizer(column, optimizer), learningRate);
  }

  /**
   * The optimizer named {@code name}; a name that is none, or an optimizer of dense variables only,
   * refused, naming the column and the tables' optimizers.
   */
  private static Optimizer optimizer(String column, String name) {
    try {
      return Optimizer.ofTable(name);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("embedding column '" + column + "': " + e.getMessage(), e);
    }
  }

  /** How an array column's rows are pooled (default SUM). */
  public EmbeddingColumn withPooling(Pooling pooling) {
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps,
        maxRowsPerShard, initScale);
  }

  /** An id gets a row of its own once seen {@code count} times; before, it reads the default row. */
  public EmbeddingColumn withMinCount(int count) {
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, count, evictAfterSteps,
        maxRowsPerShard, initScale);
  }

  /**
   * At most {@code rows} rows per ps (the table's columns together); when full, rows untouched for
   * {@code evictAfterSteps} steps are evicted (0: never, and a full table fails naming itself).
   */
  public EmbeddingColumn withCapacity(int rows, long evictAfterSteps) {
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, rows,
        initScale);
  }

  /** New rows are uniform in +-{@code scale}. */
  public EmbeddingColumn withInitScale(double scale) {
    return new EmbeddingColumn(column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps,
        maxRowsPerShard, scale);
  }

  public String column() {
    return column;
  }

  public int dim() {
    return dim;
  }

  public long buckets() {
    return buckets;
  }

  public Optimizer optimizer() {
    return optimizer;
  }

  public double learningRate() {
    return learningRate;
  }

  public Pooling pooling() {
    return pooling;
  }

  public int minCount() {
    return minCount;
  }

  public long evictAfterSteps() {
    return evictAfterSteps;
  }

  public int maxRowsPerShard() {
    return maxRowsPerShard;
  }

  public double initScale() {
    return initScale;
  }

  /**
   * Refuses {@code columns} (at least one) with {@code numericCols} as an embedding model's input
   * when a column is named twice among them, or when the factorization term's dot products meet
   * columns of several dims.
   */
  public static void checkInputs(List<EmbeddingColumn> columns, List<String> numericCols, boolean factorization) {
    if (columns.isEmpty()) {
      throw new IllegalArgumentException("an embedding model needs at least one embedding column");
    }
    if (factorization && columns.stream().map(EmbeddingColumn::dim).distinct().count() > 1) {
      throw new IllegalArgumentException("the factorization term takes dot products of the columns' embeddings: give "
          + "every embedding column one dim, got " + columns.stream().map(c -> c.column() + " " + c.dim()).toList());
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (String c : java.util.stream.Stream.concat(columns.stream().map(EmbeddingColumn::column), numericCols.stream())
        .toList()) {
      if (!seen.add(c)) {
        throw new IllegalArgumentException("column '" + c + "' is named twice among the embedding and numeric columns");
      }
    }
  }

  /** What makes two columns' rows live in one ps table: all but the column, buckets and pooling. */
  public String tableKey() {
    return dim + "/" + optimizer + "/" + learningRate + "/" + minCount + "/" + evictAfterSteps + "/" + maxRowsPerShard
        + "/" + initScale;
  }

  /** The ps table's spec for columns of this one's {@link #tableKey}, following consistency group {@code group}. */
  public EmbeddingSpec spec(String name, String group) {
    return EmbeddingSpec.builder().setName(name).setDim(dim).optOptimizer(optimizer, learningRate)
        .optMinCount(minCount).optMaxRowsPerShard(maxRowsPerShard).optEvictAfterSteps(evictAfterSteps)
        .optInit(initScale, 1).optGroup(group).build();
  }

  private void check() {
    String at = "embedding column '" + column + "': ";
    if (column == null || column.isBlank()) {
      throw new IllegalArgumentException("an embedding column needs a column name, got '" + column + "'");
    }
    if (dim < 1 || buckets < 0 || minCount < 1 || maxRowsPerShard < 1 || evictAfterSteps < 0 || !(initScale >= 0)) {
      throw new IllegalArgumentException(at + "dim, minCount and maxRowsPerShard must be >= 1, buckets, "
          + "evictAfterSteps and initScale >= 0; got dim " + dim + ", buckets " + buckets + ", minCount " + minCount
          + ", maxRowsPerShard " + maxRowsPerShard + ", evictAfterSteps " + evictAfterSteps + ", initScale " + initScale);
    }
    if (!(learningRate > 0) || pooling == null || optimizer == null) {
      throw new IllegalArgumentException(at + "learningRate must be > 0, pooling SUM or MEAN and an optimizer given, "
          + "got " + learningRate + ", " + pooling + " and " + optimizer);
    }
  }

  /** These columns as JSON (what the estimator's {@code embeddingColumns} param holds). */
  public static String toJson(List<EmbeddingColumn> columns) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (EmbeddingColumn c : columns) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("column", c.column);
      m.put("dim", c.dim);
      m.put("buckets", c.buckets);
      m.put("optimizer", c.optimizer.name());
      m.put("learningRate", c.learningRate);
      m.put("pooling", c.pooling.name());
      m.put("minCount", c.minCount);
      m.put("evictAfterSteps", c.evictAfterSteps);
      m.put("maxRowsPerShard", c.maxRowsPerShard);
      m.put("initScale", c.initScale);
      out.add(m);
    }
    try {
      return JSON.writeValueAsString(out);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The columns of {@link #toJson}'s JSON; a field left out takes {@link #of}'s default. */
  public static List<EmbeddingColumn> fromJson(String json) {
    List<Map<String, Object>> in;
    try {
      in = JSON.readValue(json, new TypeReference<List<Map<String, Object>>>() {});
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("embeddingColumns is not a JSON list of columns (" + e.getOriginalMessage()
          + "): give e.g. [{\"column\":\"C1\",\"dim\":16}]", e);
    }
    List<EmbeddingColumn> out = new ArrayList<>();
    for (Map<String, Object> m : in == null ? List.<Map<String, Object>>of() : in) {
      java.util.Set<String> unknown = new java.util.TreeSet<>(m.keySet());
      unknown.removeAll(List.of("column", "dim", "buckets", "optimizer", "learningRate", "pooling", "minCount",
          "evictAfterSteps", "maxRowsPerShard", "initScale"));
      if (!unknown.isEmpty()) {
        throw new IllegalArgumentException("embedding column " + m.get("column") + ": unknown field(s) " + unknown
            + "; the fields are column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, "
            + "maxRowsPerShard, initScale");
      }
      if (!(m.get("column") instanceof String name) || name.isBlank()) {
        throw new IllegalArgumentException("embedding column " + m + " names no column: give each a \"column\" field, "
            + "e.g. {\"column\":\"C1\",\"dim\":16}");
      }
      EmbeddingColumn d = of(name, number(m, "dim", 0).intValue());
      String pooling = String.valueOf(m.getOrDefault("pooling", "SUM")).toUpperCase(Locale.ROOT);
      if (!List.of("SUM", "MEAN").contains(pooling)) {
        throw new IllegalArgumentException("embedding column '" + d.column + "': pooling must be SUM or MEAN, got '"
            + m.get("pooling") + "'");
      }
      out.add(new EmbeddingColumn(d.column, d.dim, number(m, "buckets", 0).longValue(),
          optimizer(d.column, String.valueOf(m.getOrDefault("optimizer", d.optimizer.name()))),
          number(m, "learningRate", d.learningRate).doubleValue(), Pooling.valueOf(pooling),
          number(m, "minCount", d.minCount).intValue(), number(m, "evictAfterSteps", 0).longValue(),
          number(m, "maxRowsPerShard", d.maxRowsPerShard).intValue(),
          number(m, "initScale", d.initScale).doubleValue()));
    }
    return out;
  }

  private static Number number(Map<String, Object> m, String key, Number otherwise) {
    Object v = m.get(key);
    if (v == null) {
      return otherwise;
    }
    if (!(v instanceof Number n)) {
      throw new IllegalArgumentException("embedding column " + m.get("column") + ": " + key + " must be a number, got '"
          + v + "'");
    }
    return n;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof EmbeddingColumn c && toJson(List.of(this)).equals(toJson(List.of(c)));
  }

  @Override
  public int hashCode() {
    return toJson(List.of(this)).hashCode();
  }

  @Override
  public String toString() {
    return toJson(List.of(this));
  }
}
