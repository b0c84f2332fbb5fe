package io.sparkps.ml;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.PsToken;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * The embedding models' side of fitting and scoring. A fit trains the tables on the parameter
 * servers and, at its end, each ps writes its share of every table whole into the fit's tables
 * directory ({@link PsClient#export}), never through the driver. A model scores by loading the tables
 * once per executor JVM into in-process shards restored from that directory (a model saved holds a
 * copy of it): tables up to what one executor's memory holds.
 */
final class EmbeddingModels {
  /**
   * Loaded tables kept per JVM, the most recently used; an older one is dropped when a third is
   * loaded, and closed once no scorer holds it.
   */
  private static final int LOADED_KEPT = 2;
  private static final Map<String, Loaded> LOADED = new LinkedHashMap<>(4, 0.75f, true);
  /** The consistency group the fit's tables follow (see {@link TrainingConfig}'s groups). */
  static final String GROUP = "dl4j";

  private EmbeddingModels() {}

  /** A fit's embedding inputs and where its tables go at the end. */
  record Fit(EmbeddingInputs inputs, String tablesDir) {
    /** Checks the columns and the network's input width, and counts the rows of each partition. */
    InputChecks.Partitions check(Dataset<Row> data, TrainingConfig s, Net probe) {
      inputs.check(data.schema());
      if (!(data.schema().apply(s.labelCol()).dataType() instanceof org.apache.spark.sql.types.NumericType)) {
        throw new IllegalArgumentException("the label column '" + s.labelCol() + "' is " + data.schema()
            .apply(s.labelCol()).dataType().simpleString() + "; an embedding model takes a number per row (a class "
            + "index, 0/1 for one output unit, or a regression target)");
      }
      if (probe.inputWidth() != inputs.width()) {
        throw new IllegalArgumentException("the network's first layer takes " + probe.inputWidth() + " inputs, but the "
            + "embedding columns' dims add up to " + inputs.embeddingWidth() + " and there are "
            + inputs.numericCols().size() + " numeric columns" + (inputs.wide() ? ", " + inputs.columns().size()
            + " wide weights" : "") + (inputs.factorization() ? " and the factorization term" : "") + ": set its nIn "
            + "to " + inputs.width());
      }
      if (s.gradientAccumulation() > 1 || s.workerUpdates()) {
        throw new IllegalArgumentException("embedding columns do not go with gradientAccumulation > 1 or sparse "
            + "transfers yet: set gradientAccumulation 1 and sparseDensity 0");
      }
      List<Long> counts = select(data, s.labelCol()).javaRDD().mapPartitions(it -> {
        long n = 0;
        while (it.hasNext()) {
          it.next();
          n++;
        }
        return List.of(n).iterator();
      }).collect();
      return new InputChecks.Partitions(counts.stream().mapToLong(Long::longValue).toArray());
    }

    /** The columns a worker reads, in its order: the label, then the inputs. */
    Dataset<Row> select(Dataset<Row> data, String labelCol) {
      List<Column> cols = new ArrayList<>(List.of(functions.col(labelCol)));
      inputs.names().forEach(n -> cols.add(functions.col(n)));
      return data.select(cols.toArray(new Column[0]));
    }
  }

  /**
   * The fit of {@code inputs}: its tables go below {@code checkpointDir} when set, else (local Spark
   * only) into a temporary directory deleted when this JVM exits.
   */
  static Fit fit(SparkSession spark, EmbeddingInputs inputs, String checkpointDir) {
    String run = "model-tables-" + UUID.randomUUID();
    if (checkpointDir != null) {
      return new Fit(inputs, new org.apache.hadoop.fs.Path(checkpointDir, run).toString());
    }
    if (!spark.sparkContext().isLocal()) {
      throw new IllegalArgumentException("embedding columns need a directory every executor and the driver reach, to "
          + "hand the trained tables to the model: set checkpointDir (a Hadoop path, e.g. on HDFS)");
    }
    try {
      java.nio.file.Path dir = Files.createTempDirectory("sparkps-" + run);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir), "sparkps-delete-" + run));
      return new Fit(inputs, dir.toUri().toString());
    } catch (IOException e) {
      throw new UncheckedIOException("could not make a temporary directory for the trained tables", e);
    }
  }

  private static void deleteTree(java.nio.file.Path dir) {
    try (java.util.stream.Stream<java.nio.file.Path> all = Files.walk(dir)) {
      all.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException ignored) {
      // best effort at exit
    }
  }

  /**
   * A model's tables: its inputs, the directory of their export, the number of ps that wrote it and
   * the consistency group the tables were made in (their specs name it; "" for ASYNC tables).
   */
  record Tables(EmbeddingInputs inputs, String dir, int numPs, String group) implements Serializable {
    Tables(EmbeddingInputs inputs, String dir, int numPs) {
      this(inputs, dir, numPs, GROUP);
    }
  }

  /**
   * Saves {@code tables} below a model's data directory: {@code embeddings.json} (the columns, the
   * numeric columns, the ps count) and {@code tables/}, a copy of the export.
   */
  static void save(Tables tables, org.apache.hadoop.fs.Path data, org.apache.hadoop.conf.Configuration conf)
      throws IOException {
    org.apache.hadoop.fs.Path target = new org.apache.hadoop.fs.Path(data, "tables");
    org.apache.hadoop.fs.Path source = new org.apache.hadoop.fs.Path(tables.dir());
    org.apache.hadoop.fs.FileSystem to = target.getFileSystem(conf);
    org.apache.hadoop.fs.FileSystem from = source.getFileSystem(conf);
    // Every ps's files of the export: its tables and its (small) dense snapshot, which a restore reads too.
    List<org.apache.hadoop.fs.Path> files = new ArrayList<>();
    long tableFiles = 0;
    if (from.exists(source)) {
      for (org.apache.hadoop.fs.FileStatus f : from.listStatus(source)) {
        if (f.isFile() && f.getPath().getName().startsWith("ps-")) {
          files.add(f.getPath());
          tableFiles += f.getPath().getName().endsWith(".tables") ? 1 : 0;
        }
      }
    }
    if (tableFiles != tables.numPs()) {
      throw new IOException("the model's embedding tables are gone: " + source + " holds " + tableFiles + " of the "
          + tables.numPs() + " ps's table files (was the fit's tables directory deleted? it lives in checkpointDir, or "
          + "in a temporary directory until the JVM exits)");
    }
    to.mkdirs(target);
    for (org.apache.hadoop.fs.Path f : files) {
      org.apache.hadoop.fs.FileUtil.copy(from, f, to, new org.apache.hadoop.fs.Path(target, f.getName()), false, true,
          conf);
    }
    Map<String, Object> meta = new LinkedHashMap<>();
    meta.put("numPs", tables.numPs());
    meta.put("numericCols", tables.inputs().numericCols());
    meta.put("factorizationTerm", tables.inputs().factorization());
    meta.put("widePart", tables.inputs().wide());
    meta.put("tablesGroup", tables.group());
    meta.put("embeddingColumns", io.sparkps.ml.embedding.EmbeddingColumn.toJson(tables.inputs().columns()));
    try (java.io.OutputStream out = to.create(new org.apache.hadoop.fs.Path(data, "embeddings.json"), true)) {
      out.write(new org.nd4j.shade.jackson.databind.ObjectMapper().writeValueAsBytes(meta));
    }
  }

  /** The tables saved below a model's data directory, or null when it has none (a dense model). */
  static Tables load(org.apache.hadoop.fs.Path data, org.apache.hadoop.conf.Configuration conf) throws IOException {
    org.apache.hadoop.fs.Path file = new org.apache.hadoop.fs.Path(data, "embeddings.json");
    org.apache.hadoop.fs.FileSystem fs = file.getFileSystem(conf);
    if (!fs.exists(file)) {
      return null;
    }
    Map<?, ?> meta;
    try (java.io.InputStream in = fs.open(file)) {
      meta = new org.nd4j.shade.jackson.databind.ObjectMapper().readValue(in, Map.class);
    } catch (IOException | RuntimeException e) {
      throw new IOException(file + " is damaged: " + e.getMessage(), e);
    }
    if (!(meta.get("numPs") instanceof Number numPs) || !(meta.get("embeddingColumns") instanceof String columns)
        || !(meta.get("numericCols") instanceof List<?> numeric)) {
      throw new IOException(file + " is damaged: it needs numPs, embeddingColumns and numericCols, holds "
          + meta.keySet());
    }
    EmbeddingInputs inputs = new EmbeddingInputs(io.sparkps.ml.embedding.EmbeddingColumn.fromJson(columns),
        numeric.stream().map(String::valueOf).toList(), Boolean.TRUE.equals(meta.get("factorizationTerm")),
        Boolean.TRUE.equals(meta.get("widePart")));
    // (a model saved before the group was recorded had its tables in the run's group)
    String group = meta.get("tablesGroup") instanceof String g ? g : GROUP;
    return new Tables(inputs, new org.apache.hadoop.fs.Path(data, "tables").toString(), numPs.intValue(), group);
  }

  /**
   * The network's input of batches of rows to score, whose columns of {@code inputs} are at
   * {@code at}: each row's pooled embeddings, read through {@code lookup} (unseen ids: the default
   * row), and numeric values.
   */
  static final class BatchInput implements java.util.function.Function<List<Row>, INDArray> {
    private final CategoricalRows rows;
    private final int[] at;
    private final TableLookup lookup;

    BatchInput(EmbeddingInputs inputs, int[] at, TableLookup lookup) {
      this.rows = new CategoricalRows(inputs, 0);
      this.at = at;
      this.lookup = lookup;
    }

    @Override
    public INDArray apply(List<Row> batch) {
      rows.clear();
      for (Row r : batch) {
        rows.append(r, at, null);
      }
      int[] all = java.util.stream.IntStream.range(0, batch.size()).toArray();
      float[] x = lookup.features(lookup.pull(rows, all, 0, false));
      return Nd4j.create(x, new long[] {batch.size(), rows.inputs().width()}, 'c');
    }
  }

  /** Batches of rows to score with the tables loaded in this JVM; it holds them until closed. */
  static final class Scorer implements AutoCloseable {
    private final Loaded loaded;
    private final BatchInput input;

    Scorer(Tables tables, StructType schema) {
      int[] at = tables.inputs().positions(schema);
      this.loaded = load(tables); // after the columns are found: a scorer that could not be made holds nothing
      this.input = new BatchInput(tables.inputs(), at, loaded.lookup);
    }

    /** The network's input for {@code batch}. */
    INDArray input(List<Row> batch) {
      return input.apply(batch);
    }

    @Override
    public void close() {
      release(loaded);
    }
  }

  /** Tables restored into in-process shards of this JVM. */
  private static final class Loaded implements AutoCloseable {
    private final List<ParameterServer> servers;
    private final PsClient client;
    private final TableLookup lookup;
    /** Scorers holding it, and whether it was dropped from the cache (then the last of them closes it). */
    private int users;
    private boolean dropped;

    private Loaded(List<ParameterServer> servers, PsClient client, TableLookup lookup) {
      this.servers = servers;
      this.client = client;
      this.lookup = lookup;
    }

    @Override
    public void close() {
      client.close();
      servers.forEach(ParameterServer::close);
    }
  }

  private static Loaded load(Tables tables) {
    synchronized (LOADED) {
      Loaded known = LOADED.get(tables.dir());
      if (known != null) {
        known.users++;
        return known;
      }
      String name = "sparkps-model-tables-" + UUID.randomUUID();
      PsToken token = PsToken.generate();
      List<ParameterServer> servers = new ArrayList<>();
      PsClient client = null;
      try {
        for (int i = 0; i < tables.numPs(); i++) {
          servers.add(ParameterServer.builder().setShardIndex(i).setToken(token).optInProcess(name + "-" + i).build()
              .start());
        }
        client = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList()).setToken(token)
            .build();
        client.createGroup(ConsistencyGroup.async(GROUP));
        client.restore(tables.dir());
        Loaded loaded = new Loaded(servers, client, new TableLookup(tables.inputs(), client, tables.group()));
        loaded.users = 1;
        LOADED.put(tables.dir(), loaded);
        if (LOADED.size() > LOADED_KEPT) {
          Map.Entry<String, Loaded> eldest = LOADED.entrySet().iterator().next();
          LOADED.remove(eldest.getKey());
          eldest.getValue().dropped = true;
          if (eldest.getValue().users == 0) {
            eldest.getValue().close();
          }
        }
        return loaded;
      } catch (RuntimeException e) {
        if (client != null) {
          client.close();
        }
        servers.forEach(ParameterServer::close);
        throw new IllegalStateException("could not load the model's embedding tables from " + tables.dir() + ": "
            + e.getMessage(), e);
      }
    }
  }

  /** A scorer is done with {@code loaded}: the last one closes it if the cache dropped it meanwhile. */
  private static void release(Loaded loaded) {
    synchronized (LOADED) {
      loaded.users--;
      if (loaded.dropped && loaded.users == 0) {
        loaded.close();
      }
    }
  }
}
