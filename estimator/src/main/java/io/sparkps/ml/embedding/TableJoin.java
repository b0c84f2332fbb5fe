package io.sparkps.ml.embedding;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.KeySlots;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.client.ExportedTables;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.apache.spark.HashPartitioner;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.util.sketch.BloomFilter;
import org.nd4j.linalg.api.ndarray.INDArray;
import scala.Tuple2;

/**
 * Scores an embedding model whose tables are larger than an executor holds, by a join: no JVM ever
 * holds a table. A first pass over the input lists each partition's distinct keys per table; Spark
 * joins them with the tables' rows, which one task per ps streams from the files the fit exported
 * ({@link ExportedTables}); each key's row goes back to the partition that asked for it; a second
 * pass scores every partition with its rows at hand (a key no table holds reads the default row of
 * the ps it would live on, as on a parameter server). The input's rows stay where they are and keep
 * their order; what travels is the keys and their rows. The first pass runs when the model
 * transforms (its keys are kept, persisted, for the join): a Bloom filter of them drops the tables'
 * rows no partition asked for where they are read, so scoring a few rows against a large table
 * shuffles few of its rows.
 *
 * <p>The input is read twice, so it must give the same rows both times: one that does not (ids drawn
 * by a nondeterministic UDF, a source that changed in between) fails naming it, and is fixed by
 * persisting it first. A
 * task holds its partition's distinct keys' rows: repartition an input whose partitions read more
 * distinct ids than a task's memory holds.
 */
public final class TableJoin {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(TableJoin.class);
  private static final StructType WANTED = new StructType().add("part", DataTypes.IntegerType, false)
      .add("t", DataTypes.IntegerType, false).add("key", DataTypes.LongType, false);
  private static final StructType ROWS = new StructType().add("t", DataTypes.IntegerType, false)
      .add("key", DataTypes.LongType, false).add("vector", DataTypes.createArrayType(DataTypes.FloatType, false), false);

  /** Keys asked for above which no Bloom filter is made (it would take about 45 MB). */
  private static final long MAX_FILTERED_KEYS = 50_000_000L;

  private TableJoin() {}

  /** The ways to score an embedding model: {@code auto} picks {@code load} or {@code join} by the tables' size. */
  public static final List<String> MODES = List.of("auto", "load", "join");

  /**
   * Whether a model scores by the join (else each executor loads the tables): {@code mode} says,
   * or for "auto" the tables' files against a quarter of an executor's heap (spark.executor.memory,
   * the driver's heap in local mode): a loaded table holds its rows and optimizer state, about its
   * files' size, and a JVM keeps two models' tables.
   */
  public static boolean joins(String mode, EmbeddingModels.Tables tables, SparkSession spark) {
    if (!MODES.contains(mode)) {
      throw new IllegalArgumentException("tablesScoring is '" + mode + "'; it is one of " + MODES);
    }
    if (!mode.equals("auto")) {
      return mode.equals("join");
    }
    long heap = spark.sparkContext().isLocal() ? Runtime.getRuntime().maxMemory()
        : spark.sparkContext().getConf().getSizeAsBytes("spark.executor.memory", "1g");
    long bytes = filesBytes(tables, spark);
    boolean join = bytes > heap / 4;
    LOG.info("SparkPS: the model's tables' files hold {} MiB, an executor's heap {} MiB: {}", bytes >> 20, heap >> 20,
        join ? "scoring by the join (more than a quarter of the heap)" : "each executor loads them");
    return join;
  }

  /** The bytes of the files holding the tables (with each ps's few dense values). */
  static long filesBytes(EmbeddingModels.Tables tables, SparkSession spark) {
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(tables.dir());
    try {
      org.apache.hadoop.fs.FileSystem fs = dir.getFileSystem(spark.sparkContext().hadoopConfiguration());
      long bytes = 0;
      for (int ps = 0; ps < tables.numPs(); ps++) {
        bytes += fs.getFileStatus(io.sparkps.ps.client.ExportedTables.file(fs, tables.dir(), ps)).getLen();
      }
      return bytes;
    } catch (IOException e) {
      throw new UncheckedIOException("could not list the model's embedding tables in " + dir, e);
    }
  }

  /** Scores a partition's rows, each batch's network input made by {@code input}. */
  interface PartitionScorer extends Serializable {
    public Iterator<Row> score(Iterator<Row> rows, Function<List<Row>, INDArray> input);
  }

  /**
   * The rows of {@code tables} (t: the table's index in its inputs, key, vector), default rows left
   * out, read by one task per ps file: a dataset never held whole. With {@code wanted}, only the
   * rows whose key it might hold (a Bloom filter's false positives pass too).
   */
  static Dataset<Row> rows(SparkSession spark, EmbeddingModels.Tables tables, BloomFilter wanted) {
    List<String> names = tables.inputs().tables().stream().map(EmbeddingInputs.Table::name).toList();
    String dir = tables.dir();
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    Broadcast<BloomFilter> filter = wanted == null ? null : sc.broadcast(wanted);
    JavaRDD<Integer> shards = sc.parallelize(IntStream.range(0, tables.numPs()).boxed().toList(), tables.numPs());
    JavaRDD<Row> rows = shards.mapPartitions(it -> {
      if (!it.hasNext()) {
        return java.util.Collections.emptyIterator();
      }
      return new FileRows(ExportedTables.open(dir, it.next()), names, filter == null ? null : filter.value());
    });
    return spark.createDataFrame(rows, ROWS);
  }

  /** One ps file's rows as Spark rows, streamed; closed at its end. */
  private static final class FileRows implements Iterator<Row> {
    private final ExportedTables.Rows file;
    private final List<String> names;
    private final BloomFilter wanted;
    private Row next;

    FileRows(ExportedTables.Rows file, List<String> names, BloomFilter wanted) {
      this.file = file;
      this.names = names;
      this.wanted = wanted;
      advance();
    }

    private void advance() {
      try {
        next = null;
        while (next == null && file.next()) {
          int t = names.indexOf(file.table());
          if (t < 0) {
            throw new IllegalStateException("the model's tables file holds table '" + file.table() + "', which none "
                + "of its embedding columns reads (tables " + names + "): the tables directory is another model's");
          }
          if (file.id() != Long.MIN_VALUE && (wanted == null || wanted.mightContainLong(file.id()))) {
            next = RowFactory.create(t, file.id(), file.values().clone());
          }
        }
        if (next == null) {
          file.close();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public boolean hasNext() {
      return next != null;
    }

    @Override
    public Row next() {
      if (next == null) {
        throw new java.util.NoSuchElementException();
      }
      Row r = next;
      advance();
      return r;
    }
  }

  /**
   * Scores {@code input} with {@code scorer}, its batches' inputs made from the rows of
   * {@code tables} its keys join: the input's partitions in their order, each row scored where it is.
   */
  public static JavaRDD<Row> score(Dataset<Row> input, EmbeddingModels.Tables tables, PartitionScorer scorer) {
    SparkSession spark = input.sparkSession();
    EmbeddingInputs inputs = tables.inputs();
    int[] at = inputs.positions(input.schema());
    JavaRDD<Row> rows = input.javaRDD();
    int parts = rows.getNumPartitions();
    JavaRDD<Row> wanted = rows.mapPartitionsWithIndex((p, it) -> {
      List<Row> out = new ArrayList<>();
      KeySlots[] seen = keysOfPartition(inputs, at, it);
      for (int t = 0; t < seen.length; t++) {
        for (long key : seen[t].keys()) {
          out.add(RowFactory.create(p, t, key));
        }
      }
      return out.iterator();
    }, true).persist(StorageLevel.MEMORY_AND_DISK_SER());
    Dataset<Row> want = spark.createDataFrame(wanted, WANTED);
    // The first pass runs now, once: a Bloom filter of the keys asked for lets the tasks reading the
    // tables drop, before the shuffle, the rows no partition wants (most of a large table).
    long asked = wanted.count();
    BloomFilter filter = asked > MAX_FILTERED_KEYS ? null : want.stat().bloomFilter("key", Math.max(1, asked), 0.03);
    Dataset<Row> held = rows(spark, tables, filter);
    Dataset<Row> found = want.join(held, want.col("t").equalTo(held.col("t")).and(want.col("key").equalTo(
        held.col("key"))), "left_outer").select(want.col("part"), want.col("t"), want.col("key"), held.col("vector"));
    JavaRDD<Row> back = found.javaRDD()
        .mapToPair(r -> new Tuple2<>(r.getInt(0), r)).partitionBy(new HashPartitioner(parts)).values();
    float[][][] defaults = defaults(tables);
    return rows.zipPartitions(back, (mine, joined) -> {
      Found rowsOf = new Found(inputs, defaults, joined);
      return scorer.score(mine, new EmbeddingModels.BatchInput(inputs, at, new TableLookup(inputs, rowsOf::read)));
    });
  }

  /** A partition's distinct keys, per table. */
  private static KeySlots[] keysOfPartition(EmbeddingInputs inputs, int[] at, Iterator<Row> it) {
    int count = inputs.tables().size();
    KeySlots[] seen = new KeySlots[count];
    for (int t = 0; t < count; t++) {
      seen[t] = new KeySlots(0);
    }
    CategoricalRows one = new CategoricalRows(inputs, 0);
    while (it.hasNext()) {
      one.clear();
      one.append(it.next(), at, null);
      long[] keys = one.keys();
      for (int t = 0; t < count; t++) {
        for (EmbeddingInputs.Lookup read : inputs.lookups(t)) { // a column's table, and the wide part's
          for (int k = one.start(0, read.column()); k < one.end(0, read.column()); k++) {
            seen[t].slot(keys[k], true);
          }
        }
      }
    }
    return seen;
  }

  /** Each table's default row on each ps: [table][ps]. */
  private static float[][][] defaults(EmbeddingModels.Tables tables) {
    List<EmbeddingInputs.Table> all = tables.inputs().tables();
    float[][][] out = new float[all.size()][tables.numPs()][];
    for (int s = 0; s < tables.numPs(); s++) {
      Map<String, float[]> rows;
      try {
        rows = ExportedTables.defaultRows(tables.dir(), s);
      } catch (IOException e) {
        throw new UncheckedIOException("could not read the model's embedding tables in " + tables.dir(), e);
      }
      for (int t = 0; t < all.size(); t++) {
        float[] row = rows.get(all.get(t).name());
        if (row == null || row.length != all.get(t).settings().dim()) {
          throw new IllegalStateException("the model's tables in " + tables.dir() + " hold no table '"
              + all.get(t).name() + "' of dim " + all.get(t).settings().dim() + " on ps " + s + " (they hold "
              + rows.keySet() + "): the directory is another model's");
        }
        out[t][s] = row;
      }
    }
    return out;
  }

  /** The rows a partition's keys joined, per table; a key with none reads its ps's default row. */
  private static final class Found {
    private final KeySlots[] keys;
    private final float[][] vectors;
    /** Per table, the slots of keys no table row joined. */
    private final java.util.BitSet[] absent;
    private final float[][][] defaults;
    private final int[] dims;

    Found(EmbeddingInputs inputs, float[][][] defaults, Iterator<Row> joined) {
      int count = inputs.tables().size();
      this.defaults = defaults;
      this.keys = new KeySlots[count];
      this.vectors = new float[count][];
      this.dims = new int[count];
      this.absent = new java.util.BitSet[count];
      for (int t = 0; t < count; t++) {
        absent[t] = new java.util.BitSet();
        keys[t] = new KeySlots(0);
        dims[t] = inputs.tables().get(t).settings().dim();
        vectors[t] = new float[0];
      }
      while (joined.hasNext()) {
        Row r = joined.next();
        int t = r.getInt(1);
        int slot = keys[t].slot(r.getLong(2), true);
        int dim = dims[t];
        if ((slot + 1) * dim > vectors[t].length) {
          vectors[t] = java.util.Arrays.copyOf(vectors[t], Math.max(2 * vectors[t].length, (slot + 1) * dim));
        }
        if (r.isNullAt(3)) {
          absent[t].set(slot);
        } else {
          List<Float> v = r.getList(3);
          for (int d = 0; d < dim; d++) {
            vectors[t][slot * dim + d] = v.get(d);
          }
        }
      }
    }

    float[] read(int t, long[] ids) {
      int dim = dims[t];
      float[] out = new float[ids.length * dim];
      for (int i = 0; i < ids.length; i++) {
        int slot = keys[t].slot(ids[i], false);
        if (slot < 0) {
          throw new IllegalStateException("a row read an id its partition did not list when the input was read "
              + "before: the input DataFrame gives other rows each time it is read (a UDF that draws random "
              + "values, a source that changed); persist it (or write it out) before transform");
        }
        boolean held = !absent[t].get(slot);
        float[] from = held ? vectors[t] : defaults[t][EmbeddingTable.shardOf(ids[i], defaults[t].length)];
        System.arraycopy(from, held ? slot * dim : 0, out, i * dim, dim);
      }
      return out;
    }
  }
}
