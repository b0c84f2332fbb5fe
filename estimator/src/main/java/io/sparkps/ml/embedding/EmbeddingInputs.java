package io.sparkps.ml.embedding;

import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.spec.EmbeddingSpec;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructType;

/**
 * The input of an embedding model: categorical columns, each an {@link EmbeddingColumn}, and
 * numeric columns. The network's input row is, in this order, each categorical column's pooled
 * embedding ({@code dim} floats each) and then the numeric columns' values (null reads 0).
 *
 * <p>With the wide part (as Wide &amp; Deep's), each categorical column also has a 1-dimensional
 * embedding: a weight per id, learned in one more table (the {@code wide} table, holding every
 * column's ids, new rows 0); the columns' pooled weights follow the numeric values, one input per
 * column, for a network that adds them into its output (see {@link WideAndDeep}).
 *
 * <p>With the factorization term (as DeepFM's), one more input comes last: the sum over every pair
 * of columns of their pooled embeddings' dot product, {@code 1/2 (|sum e_c|^2 - sum |e_c|^2)}, whose
 * gradient reaches every column's rows; the columns then need one dim.
 *
 * <p>Columns whose tables would be configured alike ({@code dim}, optimizer, admission, capacity)
 * share one table on the parameter servers, so a step pulls once per such group, not once per
 * column; their ids are kept apart by keying each row by a 64-bit hash of the column and the id
 * (hashed columns: of the column and the bucket). Two distinct (column, id) pairs share a row with a
 * probability of about {@code n^2 / 2^65} for {@code n} distinct pairs: 2e-6 for Criteo's 9 million.
 */
public final class EmbeddingInputs implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The id a missing value reads, before hashing with its column (a dynamic column's own id of this value too). */
  static final long MISSING = Long.MIN_VALUE;
  private final List<EmbeddingColumn> columns;
  private final List<String> numericCols;
  private final io.sparkps.ml.param.NumericTransform numericTransform;
  private final List<Table> tables;
  /** For each column: its table's index and its salt. */
  private final int[] tableOf;
  private final long[] salt;
  private final int[] offset;
  private final boolean factorization;
  /** The lookups (a column read from a table into the input) of each table, deep then wide. */
  private final List<List<Lookup>> lookups;
  private final boolean wide;

  /**
   * Column {@code column} read from table {@code table} (an index into {@link #tables()}) into the
   * network's input at {@code offset}, {@code dim} floats: its embedding, or its wide weight.
   */
  public record Lookup(int column, int table, int offset, int dim) implements Serializable {}

  /** One ps table: its name, spec settings and the columns (indices into {@link #columns()}) it holds. */
  public record Table(String name, EmbeddingColumn settings, int[] columns) implements Serializable {
    /** The ps spec of this table, following consistency group {@code group} ("" for ASYNC). */
    public EmbeddingSpec spec(String group) {
      return settings.spec(name, group);
    }
  }

  /** Inputs of {@code columns} (at least one, distinct) followed by the numeric {@code numericCols}. */
  public EmbeddingInputs(List<EmbeddingColumn> columns, List<String> numericCols) {
    this(columns, numericCols, false);
  }

  /** As above, with the factorization term as the last input when {@code factorization}. */
  public EmbeddingInputs(List<EmbeddingColumn> columns, List<String> numericCols, boolean factorization) {
    this(columns, numericCols, factorization, false);
  }

  /** As above, with the wide part's weights after the numeric values when {@code wide}. */
  public EmbeddingInputs(List<EmbeddingColumn> columns, List<String> numericCols, boolean factorization,
      boolean wide) {
    this(columns, numericCols, factorization, wide, io.sparkps.ml.param.NumericTransform.NONE);
  }

  /** As above, the numeric values read through {@code transform}. */
  public EmbeddingInputs(List<EmbeddingColumn> columns, List<String> numericCols, boolean factorization,
      boolean wide, io.sparkps.ml.param.NumericTransform transform) {
    this.numericTransform = java.util.Objects.requireNonNull(transform, "transform");
    this.factorization = factorization;
    this.wide = wide;
    EmbeddingColumn.checkInputs(columns, numericCols, factorization);
    this.columns = List.copyOf(columns);
    this.numericCols = List.copyOf(numericCols);
    Map<String, List<Integer>> byKey = new LinkedHashMap<>();
    for (int i = 0; i < columns.size(); i++) {
      byKey.computeIfAbsent(columns.get(i).tableKey(), k -> new ArrayList<>()).add(i);
    }
    tables = new ArrayList<>();
    tableOf = new int[columns.size()];
    salt = new long[columns.size()];
    offset = new int[columns.size()];
    for (List<Integer> members : byKey.values()) {
      EmbeddingColumn first = columns.get(members.get(0));
      String name = "embeddings-" + first.dim() + "-" + first.column();
      for (int m : members) {
        tableOf[m] = tables.size();
      }
      tables.add(new Table(name, first, members.stream().mapToInt(Integer::intValue).toArray()));
    }
    int at = 0;
    lookups = new ArrayList<>();
    tables.forEach(t -> lookups.add(new ArrayList<>()));
    for (int i = 0; i < columns.size(); i++) {
      salt[i] = hash(columns.get(i).column());
      offset[i] = at;
      lookups.get(tableOf[i]).add(new Lookup(i, tableOf[i], at, columns.get(i).dim()));
      at += columns.get(i).dim();
    }
    if (wide) {
      int[] all = java.util.stream.IntStream.range(0, columns.size()).toArray();
      List<Lookup> weights = new ArrayList<>();
      at += numericCols.size();
      for (int i = 0; i < columns.size(); i++) {
        weights.add(new Lookup(i, tables.size(), at + i, 1));
      }
      tables.add(new Table("wide-" + columns.get(0).column(), wideSettings(tables), all));
      lookups.add(weights);
    }
  }

  /**
   * The wide table's settings: one float per id, the first column's optimizer and rate, new rows 0
   * (a linear model's start). It holds the keys of all the {@code tables} (the columns' tables), so
   * its capacity is the sum of theirs; it admits an id as soon as the most eager of them does and
   * evicts only when all of them do.
   */
  private static EmbeddingColumn wideSettings(List<Table> tables) {
    List<EmbeddingColumn> deep = tables.stream().map(Table::settings).toList();
    long rows = deep.stream().mapToLong(EmbeddingColumn::maxRowsPerShard).sum();
    long evict = deep.stream().anyMatch(c -> c.evictAfterSteps() == 0) ? 0
        : deep.stream().mapToLong(EmbeddingColumn::evictAfterSteps).max().orElse(0);
    return EmbeddingColumn.of("wide", 1).withOptimizer(deep.get(0).optimizer(), deep.get(0).learningRate())
        .withMinCount(deep.stream().mapToInt(EmbeddingColumn::minCount).min().orElse(1))
        .withCapacity((int) Math.min(Integer.MAX_VALUE, rows), evict).withInitScale(0);
  }

  public List<EmbeddingColumn> columns() {
    return columns;
  }

  public List<String> numericCols() {
    return numericCols;
  }

  /** How the numeric columns are read. */
  public io.sparkps.ml.param.NumericTransform numericTransform() {
    return numericTransform;
  }

  /** The ps tables, each holding one or more columns. */
  public List<Table> tables() {
    return tables;
  }

  /** The index in {@link #tables()} of column {@code c}'s table. */
  public int tableOf(int c) {
    return tableOf[c];
  }

  /** Where column {@code c}'s pooled embedding starts in the network's input row. */
  public int offset(int c) {
    return offset[c];
  }

  /** Floats of the embeddings in the network's input row (the numeric values follow). */
  public int embeddingWidth() {
    return columns.isEmpty() ? 0 : offset[columns.size() - 1] + columns.get(columns.size() - 1).dim();
  }

  /**
   * The network's input width: every pooled embedding, every numeric column, the wide part's
   * weight per column if on, and the factorization term if on.
   */
  public int width() {
    return embeddingWidth() + numericCols.size() + (wide ? columns.size() : 0) + (factorization ? 1 : 0);
  }

  /** Whether each column's wide weight is an input too (after the numeric values), from the last table. */
  public boolean wide() {
    return wide;
  }

  /** Where the wide weights start in the network's input row (they are {@code columns().size()} floats). */
  public int wideOffset() {
    return embeddingWidth() + numericCols.size();
  }

  /** What table {@code t} feeds into the input: its columns' embeddings, or (the wide table) their weights. */
  public List<Lookup> lookups(int t) {
    return lookups.get(t);
  }

  /** Whether the last input is the factorization term (the pairwise dot products of the pooled embeddings). */
  public boolean factorization() {
    return factorization;
  }

  /** The input columns, categorical first, then numeric: the order rows are read in. */
  public List<String> names() {
    List<String> out = new ArrayList<>();
    columns.forEach(c -> out.add(c.column()));
    out.addAll(numericCols);
    return out;
  }

  /**
   * Checks that {@code schema} has every input column with a type this reads: categorical columns
   * of strings or whole numbers (or arrays of them), numeric columns of numbers.
   */
  public void check(StructType schema) {
    List<String> names = java.util.Arrays.asList(schema.fieldNames());
    for (EmbeddingColumn c : columns) {
      if (!names.contains(c.column())) {
        throw new IllegalArgumentException("the embedding column '" + c.column() + "' is not in the DataFrame (its "
            + "columns: " + names + ")");
      }
      DataType t = schema.apply(c.column()).dataType();
      DataType element = t instanceof ArrayType a ? a.elementType() : t;
      if (!(element == DataTypes.StringType || element == DataTypes.LongType || element == DataTypes.IntegerType
          || element == DataTypes.ShortType || element == DataTypes.ByteType)) {
        throw new IllegalArgumentException("the embedding column '" + c.column() + "' is " + t.simpleString()
            + "; it must hold ids: strings or whole numbers, or arrays of them (cast it, e.g. col.cast(\"long\"))");
      }
    }
    for (String n : numericCols) {
      if (!names.contains(n)) {
        throw new IllegalArgumentException("the numeric column '" + n + "' is not in the DataFrame (its columns: "
            + names + ")");
      }
      if (!(schema.apply(n).dataType() instanceof NumericType)) {
        throw new IllegalArgumentException("the numeric column '" + n + "' is " + schema.apply(n).dataType()
            .simpleString() + "; it must be a number (an embedding column holds ids)");
      }
    }
  }

  /** Where the input columns ({@link #names()} order) are in rows of {@code schema}. */
  public int[] positions(StructType schema) {
    List<String> names = names();
    int[] at = new int[names.size()];
    for (int i = 0; i < at.length; i++) {
      at[i] = schema.fieldIndex(names.get(i));
    }
    return at;
  }

  /** The row key of a value of column {@code c} (a String or a whole Number); null is the missing value. */
  public long key(int c, Object value) {
    EmbeddingColumn col = columns.get(c);
    long id;
    if (value == null) {
      id = col.buckets() > 0 ? col.buckets() : MISSING;
    } else {
      long raw = value instanceof String s ? hash(s) : ((Number) value).longValue();
      id = col.buckets() > 0 ? Math.floorMod(mix(raw), col.buckets()) : raw;
    }
    return mix(mix(id) ^ salt[c]);
  }

  /** A 64-bit hash of a string (FNV-1a over its chars, then mixed). */
  static long hash(String s) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < s.length(); i++) {
      h ^= s.charAt(i);
      h *= 0x100000001b3L;
    }
    return mix(h);
  }

  /** A bijection of 64-bit values that spreads neighbours (SplitMix64's finalizer). */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }
}
