package io.sparkps.bench;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.spec.Consistency;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Scoring an embedding model whose tables are larger than the scoring JVM's heap, in two JVMs.
 *
 * <p>{@code train DIR IDS}: fits a model with one categorical column of IDS distinct ids (dim 32,
 * AdaGrad: 64 floats a row with its state) on 4 ps and saves it below DIR. {@code loaded DIR}
 * scores a sample of 2,000 rows with the tables loaded (a JVM that holds them) and writes the
 * probabilities beside it.
 *
 * <p>{@code score DIR ROWS [MODES]}: loads the model (in a JVM whose heap is smaller than its
 * tables' files, {@code auto} joins), scores the 2,000 sample rows, whose probabilities must equal
 * the loaded tables' to 1e-6, and ROWS rows drawn from the ids; MODES (default auto; e.g.
 * {@code join,load} side by side in a JVM that holds the tables) say how. Prints the tables' bytes,
 * the heap limit, the heap pools' peaks and the times.
 */
public final class TableScoringBenchmark {
  private static final int DIM = 32;
  private static final int SAMPLE = 2_000;

  private TableScoringBenchmark() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2 || !List.of("train", "loaded", "score").contains(args[0])) {
      throw new IllegalArgumentException("usage: train DIR IDS | loaded DIR | score DIR ROWS [auto|load|join]");
    }
    Path dir = Path.of(args[1]);
    long rows = args.length > 2 ? Long.parseLong(args[2]) : 0;
    int cores = Runtime.getRuntime().availableProcessors();
    SparkSession spark = SparkSession.builder().master("local[" + Math.max(5, cores) + "]")
        .appName("table-scoring-bench").config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", String.valueOf(4 * cores))
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    // the line saying how auto chose to read the tables
    org.apache.logging.log4j.core.config.Configurator.setLevel("io.sparkps.ml.embedding.TableJoin",
        org.apache.logging.log4j.Level.INFO);
    try {
      if (args[0].equals("train")) {
        train(spark, dir, rows, cores);
      } else if (args[0].equals("loaded")) {
        loaded(spark, dir);
      } else {
        score(spark, dir, rows, cores, args.length > 3 ? args[3] : "auto");
      }
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1); // (the threads Spark leaves would keep the JVM alive)
    } finally {
      spark.stop();
    }
    System.exit(0); // a barrier stage leaves a non-daemon timer thread
  }

  /** Rows {@code first ..}: id ({@code id} itself, or drawn from {@code ids} ids when > 0), x and a label. */
  private static Dataset<Row> rows(SparkSession spark, long first, long count, long ids, int partitions) {
    Column id = functions.col("id");
    Column item = ids > 0 ? functions.pmod(functions.xxhash64(id), functions.lit(ids)) : id;
    return spark.range(first, first + count, 1, partitions).select(item.as("item"),
        functions.sin(id).as("x"),
        functions.when(functions.pmod(functions.xxhash64(item, functions.lit(7)), functions.lit(10)).lt(3), 1.0)
            .otherwise(0.0).as("label"));
  }

  private static void train(SparkSession spark, Path dir, long ids, int cores) throws Exception {
    String network = new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(2e-3)).list()
        .layer(new DenseLayer.Builder().nIn(DIM + 1).nOut(16).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(16).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    Dataset<Row> train = rows(spark, 0, ids, 0, cores).cache();
    train.count();
    long start = System.nanoTime();
    Dl4jModel model = new Dl4jEstimator().setEmbeddingColumns(List.of(EmbeddingColumn.of("item", DIM)
        .withOptimizer("ADAGRAD", 0.05).withCapacity((int) (ids / 4 * 1.2 + 1000), 0)), "x").setNetworkJson(network)
        .setNumWorkers(1).setNumPs(4).setBatchSize(4096).setEpochs(1).setConsistency(Consistency.ASYNC)
        .setCheckpointDir(dir.resolve("checkpoints").toUri().toString()).setSeed(1).fit(train);
    System.out.printf(Locale.ROOT, "trained: %d ids, dim %d, AdaGrad, 4 ps, %.1f s%n", ids, DIM,
        (System.nanoTime() - start) / 1e9);
    model.write().overwrite().save(dir.resolve("model").toString());
    Files.writeString(dir.resolve("ids.txt"), String.valueOf(ids));
    System.out.printf(Locale.ROOT, "saved: %s, the tables' files %,d bytes%n", dir.resolve("model"),
        tableBytes(dir.resolve("model")));
  }

  /** The sample's probabilities with the tables loaded into this (large) JVM: the reference. */
  private static void loaded(SparkSession spark, Path dir) throws Exception {
    Dl4jModel model = Dl4jModel.load(dir.resolve("model").toString()).setTablesScoring("load");
    long ids = Long.parseLong(Files.readString(dir.resolve("ids.txt")).trim());
    long start = System.nanoTime();
    model.transform(rows(spark, 1_000_000_000L, SAMPLE, ids, 1)).select("probability").write().mode("overwrite")
        .parquet(dir.resolve("sample-loaded").toString());
    System.out.printf(Locale.ROOT, "reference: %d rows scored with the tables loaded in %.1f s (heap limit %,d MiB)%n",
        SAMPLE, (System.nanoTime() - start) / 1e9, Runtime.getRuntime().maxMemory() >> 20);
  }

  private static void score(SparkSession spark, Path dir, long count, int cores, String modes) throws Exception {
    long tables = tableBytes(dir.resolve("model"));
    long ids = Long.parseLong(Files.readString(dir.resolve("ids.txt")).trim());
    long heap = Runtime.getRuntime().maxMemory();
    System.out.printf(Locale.ROOT, "scoring JVM: heap limit %,d MiB; the model's tables' files %,d MiB (%.1fx the "
        + "heap)%n", heap >> 20, tables >> 20, (double) tables / heap);
    List<Row> loaded = spark.read().parquet(dir.resolve("sample-loaded").toString()).collectAsList();
    for (String mode : modes.split(",")) { // side by side in this JVM: e.g. join,load
      Dl4jModel model = Dl4jModel.load(dir.resolve("model").toString()).setTablesScoring(mode);
      long start = System.nanoTime();
      List<Row> scored = model.transform(rows(spark, 1_000_000_000L, SAMPLE, ids, 1)).select("probability")
          .collectAsList();
      double sampleSeconds = (System.nanoTime() - start) / 1e9;
      double worst = 0;
      for (int i = 0; i < SAMPLE; i++) {
        worst = Math.max(worst, Math.abs(((Vector) scored.get(i).get(0)).apply(1)
            - ((Vector) loaded.get(i).get(0)).apply(1)));
      }
      System.out.printf(Locale.ROOT, "sample: %d rows scored (%s) in %.1f s; largest difference from the loaded "
          + "tables' probabilities %.2e%s%n", SAMPLE, mode, sampleSeconds, worst, worst <= 1e-6 ? "" : "  <-- ABOVE 1e-6");
      start = System.nanoTime();
      Row summary = model.transform(rows(spark, 0, count, ids, cores)).select(functions.count("*"), functions.avg(
          org.apache.spark.ml.functions.vector_to_array(functions.col("probability"), "float32").getItem(1))).first();
      double seconds = (System.nanoTime() - start) / 1e9;
      System.out.printf(Locale.ROOT, "scored %,d rows (%s) in %.1f s (%.0f rows/s), mean probability of a click "
          + "%.4f%n", summary.getLong(0), mode, seconds, summary.getLong(0) / seconds, summary.getDouble(1));
    }
    StringBuilder pools = new StringBuilder();
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        pools.append(String.format(Locale.ROOT, ", %s peak %,d MiB", pool.getName(),
            pool.getPeakUsage().getUsed() >> 20));
      }
    }
    System.out.printf(Locale.ROOT, "heap: limit %,d MiB%s; tables %,d MiB%n", heap >> 20, pools, tables >> 20);
  }

  private static long tableBytes(Path model) throws Exception {
    try (var files = Files.walk(model)) {
      // Each ps's file below the model's tables folder (a save's file; a tables file in the format before).
      return files.filter(p -> p.getParent().getFileName().toString().equals("tables")
          && p.getFileName().toString().matches("ps-\\d+\\.(snapshot|tables)")).mapToLong(p -> p.toFile().length()).sum();
    }
  }
}
