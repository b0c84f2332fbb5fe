package io.sparkps.ml.embedding;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.PsToken;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.sql.Row;
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
public final class EmbeddingModels {
  /**
   * Loaded tables kept per JVM, the most recently used; an older one is dropped when a third is
   * loaded, and closed once no scorer holds it.
   */
  private static final int LOADED_KEPT = 2;
  private static final Map<String, Loaded> LOADED = new LinkedHashMap<>(4, 0.75f, true);
  /** The consistency group the fit's tables follow (see {@link TrainingConfig}'s groups). */
  public static final String GROUP = "dl4j";

  private EmbeddingModels() {}

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
  public static void save(Tables tables, org.apache.hadoop.fs.Path data, org.apache.hadoop.conf.Configuration conf)
      throws IOException {
    org.apache.hadoop.fs.Path target = new org.apache.hadoop.fs.Path(data, "tables");
    org.apache.hadoop.fs.Path source = new org.apache.hadoop.fs.Path(tables.dir());
    org.apache.hadoop.fs.FileSystem to = target.getFileSystem(conf);
    org.apache.hadoop.fs.FileSystem from = source.getFileSystem(conf);
    // Every ps's file of the export: its tables and its (small) variables, in one file a ps (two in
    // an export of the format before: the variables' snapshot and the tables' file).
    List<org.apache.hadoop.fs.Path> files = new ArrayList<>();
    long tableFiles = 0;
    if (from.exists(source)) {
      for (org.apache.hadoop.fs.FileStatus f : from.listStatus(source)) {
        if (f.isFile() && f.getPath().getName().startsWith("ps-")) {
          files.add(f.getPath());
        }
      }
      for (int ps = 0; ps < tables.numPs(); ps++) {
        tableFiles += from.exists(io.sparkps.ps.client.ExportedTables.file(from, tables.dir(), ps)) ? 1 : 0;
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
    meta.put("numericTransform", tables.inputs().numericTransform().name());
    meta.put("tablesGroup", tables.group());
    meta.put("embeddingColumns", io.sparkps.ml.param.EmbeddingColumn.toJson(tables.inputs().columns()));
    try (java.io.OutputStream out = to.create(new org.apache.hadoop.fs.Path(data, "embeddings.json"), true)) {
      out.write(new org.nd4j.shade.jackson.databind.ObjectMapper().writeValueAsBytes(meta));
    }
  }

  /** The tables saved below a model's data directory, or null when it has none (a dense model). */
  public static Tables load(org.apache.hadoop.fs.Path data, org.apache.hadoop.conf.Configuration conf)
      throws IOException {
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
    EmbeddingInputs inputs = new EmbeddingInputs(io.sparkps.ml.param.EmbeddingColumn.fromJson(columns),
        numeric.stream().map(String::valueOf).toList(), Boolean.TRUE.equals(meta.get("factorizationTerm")),
        Boolean.TRUE.equals(meta.get("widePart")),
        // (a model saved before the transform was recorded read its numeric columns as they are)
        io.sparkps.ml.param.NumericTransform.valueOf(meta.get("numericTransform") instanceof String t ? t : "NONE"));
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
    public INDArray input(List<Row> batch) {
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
