package io.sparkps.bench;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.datasets.ClickThroughData;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.WideAndDeep;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.classification.FMClassifier;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.ml.feature.FeatureHasher;
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
 * Click-through data of Criteo's shape (generated, 26 categorical and 13 numeric columns, clicks from
 * a planted model whose AUC is the bar) trained side by side on one embedded Spark with all cores:
 * SparkPS's embedding model (2 workers, 2 ps, SYNC), and Spark ML's own {@code LogisticRegression}
 * and {@code FMClassifier} on the same rows through {@code FeatureHasher} (2^20 features: every
 * categorical column hashed as categories, the numeric ones as values), Spark's recommended input for
 * high-cardinality categorical data. Each peer's regularization and step are picked on a validation
 * slice of the training rows, never on the test rows; the chosen one is timed. Every model is scored
 * on the same held-out rows, off the clock. SparkPS's time to each peer's AUC comes from its
 * evaluator's reports on 5,000 held-out rows, stamped on the driver as they arrive.
 *
 * <p>Arguments: {@code [trainRows] [scale] [epochs] [seed] [trainers]} (default 200000, 0.001, 3, 1,
 * all; trainers: a comma-separated subset of sparkps (an embedding MLP), widedeep (the same
 * deep part beside a wide part: a weight per id, and the numeric values, into the output), deepfm
 * (Wide &amp; Deep with the factorization term beside the wide part), dl4j (the embedding MLP in
 * DL4J alone, {@link Dl4jEmbeddingPeer}), lr, fm; a SparkPS or DL4J trainer may name its minibatch,
 * e.g. {@code sparkps:128} (default 256; SparkPS's per worker, and its SYNC steps average the two
 * workers' minibatches, so {@code sparkps:128} updates as often as {@code dl4j:256}).
 */
public final class ClickThroughBenchmark {
  /** An id's row is its own once seen this often (SparkPS: pulled; DL4J: in the training rows); -Dbench.minCount. */
  private static final int MIN_COUNT = Integer.getInteger("bench.minCount", 20);
  /** The SparkPS trainers' workers (the trainer's spec sets it). */
  private static int workers = 2;
  private ClickThroughBenchmark() {}

  public static void main(String[] args) throws Exception {
    long rows = args.length > 0 ? Long.parseLong(args[0]) : 200_000;
    double scale = args.length > 1 ? Double.parseDouble(args[1]) : 0.001;
    int epochs = args.length > 2 ? Integer.parseInt(args[2]) : 3;
    long seed = args.length > 3 ? Long.parseLong(args[3]) : 1;
    String trainers = args.length > 4 ? args[4] : "sparkps,widedeep,deepfm,dl4j,lr,fm";
    int cores = Runtime.getRuntime().availableProcessors();
    // 2 ps + 2 workers + 1 evaluator need 5 slots; the Spark ML peers get every core's slot as well
    SparkSession spark = SparkSession.builder().master("local[" + Math.max(5, cores) + "]").appName("click-through-bench")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", String.valueOf(cores))
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    try {
      ClickThroughData data = ClickThroughData.builder().optScale(scale).optSignalIds(100).optSeed(seed).build();
      Dataset<Row> train = logCounts(data, data.rows(spark, 0, rows, cores)).cache();
      Dataset<Row> test = logCounts(data, data.rows(spark, 10_000_000, 50_000, cores)).cache();
      System.out.printf(Locale.ROOT, "click-through: %d training rows (%d clicks), %d held out, scale %s, seed %d, "
          + "%d cores%n", train.count(), train.filter("label = 1").count(), test.count(), scale, seed, cores);
      double planted = data.plantedAuc(data.rows(spark, 10_000_000, 50_000, cores));
      System.out.printf(Locale.ROOT, "planted model: AUC %.4f%n", planted);
      List<Result> results = new ArrayList<>();
      for (String spec : trainers.split(",")) {
        // "name", "name:batch" or, for SparkPS, "name:batch:workers" (default 256 per worker, 2 workers)
        String[] parts = spec.trim().split(":");
        String t = parts[0];
        int batch = parts.length > 1 ? Integer.parseInt(parts[1]) : 256;
        workers = parts.length > 2 ? Integer.parseInt(parts[2]) : 2;
        switch (t) {
          case "sparkps" -> results.add(sparkps(data, train, test, epochs, false, false, batch));
          case "widedeep" -> results.add(sparkps(data, train, test, epochs, true, false, batch));
          case "deepfm" -> results.add(sparkps(data, train, test, epochs, true, true, batch));
          case "dl4j" -> results.add(dl4j(data, train, test, epochs, batch));
          case "lr" -> results.add(logisticRegression(data, train, test));
          case "fm" -> results.add(factorizationMachine(data, train, test));
          default -> throw new IllegalArgumentException("unknown trainer '" + t + "': sparkps, widedeep, deepfm, "
              + "dl4j, lr or fm");
        }
      }
      System.out.println();
      System.out.printf(Locale.ROOT, "%-52s %8s %10s %10s %12s%n", "trainer", "AUC", "gap", "seconds",
          "examples/s");
      for (Result r : results) {
        System.out.printf(Locale.ROOT, "%-52s %8.4f %10.4f %10.1f %12s%n", r.name, r.auc, planted - r.auc, r.seconds,
            r.examples > 0 ? String.format(Locale.ROOT, "%.0f", r.examples / r.seconds) : "");
      }
      for (Result ours : results.stream().filter(r -> r.curve != null).toList()) {
        for (Result peer : results) {
          if (peer.curve == null) {
            double reached = ours.secondsTo(peer.auc);
            System.out.printf(Locale.ROOT, "%s reached %s's AUC %.4f after %s s (it took %.1f s): %s%n", ours.name,
                peer.name, peer.auc, Double.isNaN(reached) ? "never" : String.format(Locale.ROOT, "%.1f", reached), peer.seconds,
                Double.isNaN(reached) ? "" : String.format(Locale.ROOT, "%.2fx its time", reached / peer.seconds));
          }
        }
      }
    } catch (Throwable failure) {
      failure.printStackTrace(System.out);
      spark.stop();
      System.exit(1);
    }
    spark.stop();
    System.exit(0); // the barrier stage's timer thread
  }

  /** A trainer's held-out AUC and fit time; for SparkPS its evaluator's (seconds, AUC) reports. */
  private record Result(String name, double auc, double seconds, List<double[]> curve, long examples) {
    double secondsTo(double target) {
      for (double[] p : curve) {
        if (p[1] >= target) {
          return p[0];
        }
      }
      return Double.NaN;
    }
  }

  private static Dataset<Row> logCounts(ClickThroughData data, Dataset<Row> rows) {
    for (String c : data.numericColumns()) {
      rows = rows.withColumn(c, functions.log1p(functions.col(c)));
    }
    return rows;
  }

  private static double auc(Dataset<Row> scored, String column) {
    return new BinaryClassificationEvaluator().setRawPredictionCol(column).setNumBins(0).evaluate(scored);
  }

  private static Result sparkps(ClickThroughData data, Dataset<Row> train, Dataset<Row> test, int epochs,
      boolean wide, boolean factorization, int batch) throws Exception {
    List<EmbeddingColumn> columns = new ArrayList<>();
    for (String c : data.categoricalColumns()) {
      EmbeddingColumn column = EmbeddingColumn.of(c, 8).withOptimizer("ADAGRAD", 0.1).withMinCount(MIN_COUNT);
      // -Dbench.tablePerColumn: a table (so a default row) per column, as DL4J's layer per field
      columns.add(Boolean.getBoolean("bench.tablePerColumn") ? column.withCapacity(1_000_000 + columns.size(), 0)
          : column);
    }
    EmbeddingInputs inputs = new EmbeddingInputs(columns, data.numericColumns(), factorization, wide);
    String network = wide ? WideAndDeep.network(inputs, new int[] {64, 32}, 2, 3, 2e-3).toJson()
        : new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(2e-3)).list()
            .layer(new DenseLayer.Builder().nIn(inputs.width()).nOut(64).activation(Activation.RELU).build())
            .layer(new DenseLayer.Builder().nIn(64).nOut(32).activation(Activation.RELU).build())
            .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(2)
                .activation(Activation.SOFTMAX).build()).build().toJson();
    List<double[]> curve = new java.util.concurrent.CopyOnWriteArrayList<>();
    // the chief's (time, examples) reports: its steps' own pace, without the launch, reading and export
    List<double[]> chief = new java.util.concurrent.CopyOnWriteArrayList<>();
    long[] start = {0};
    Dl4jEstimator estimator = new Dl4jEstimator().setEmbeddingColumns(columns,
        data.numericColumns().toArray(new String[0])).setNetworkJson(network).setNumWorkers(workers).setNumPs(2)
        .setBatchSize(batch).setEpochs(epochs).setConsistency(Consistency.SYNC).setSeed(1)
        .setFactorizationTerm(factorization).setWidePart(wide)
        .setEvaluationData(test.limit(5000)).setEvalEverySeconds(2).addListener(new ProgressListener() {
          @Override
          public void onProgress(TaskProgress p) {
            if (p.role() == Role.EVALUATOR && p.metrics().containsKey("auc")) {
              curve.add(new double[] {(System.nanoTime() - start[0]) / 1e9, p.metrics().get("auc")});
            }
            if (p.role() == Role.CHIEF && p.examples() > 0) {
              chief.add(new double[] {System.nanoTime() / 1e9, p.examples()});
            }
          }

          @Override
          public void onEnd(JobStatus status, Throwable failure) {}
        });
    start[0] = System.nanoTime();
    Dl4jModel model = estimator.fit(train);
    double seconds = (System.nanoTime() - start[0]) / 1e9;
    double auc = auc(model.transform(test), "probability");
    String name = "SparkPS " + (factorization ? "DeepFM" : wide ? "Wide & Deep" : "embedding MLP")
        + ", " + workers + " workers x " + batch + ", 2 ps, SYNC";
    double stepsRate = chief.size() < 2 ? Double.NaN : (chief.get(chief.size() - 1)[1] - chief.get(0)[1])
        / (chief.get(chief.size() - 1)[0] - chief.get(0)[0]) * workers;
    System.out.printf(Locale.ROOT, "%s: %d epochs in %.1f s, held-out AUC %.4f; while stepping %.0f examples/s (the "
        + "chief's reports x %d workers); evaluator: %s%n", name, epochs, seconds, auc, stepsRate, workers,
        curve.stream().map(p -> String.format(Locale.ROOT, "%.0fs:%.4f", p[0], p[1])).toList());
    return new Result(name, auc, seconds, curve, train.count() * epochs);
  }

  /** DL4J alone in this JVM: the embedding MLP's network over EmbeddingLayers (see {@link Dl4jEmbeddingPeer}). */
  private static Result dl4j(ClickThroughData data, Dataset<Row> train, Dataset<Row> test, int epochs, int batch) {
    Dl4jEmbeddingPeer.Fitted f = Dl4jEmbeddingPeer.fit(data, train, test, 8, MIN_COUNT, 0.1, new int[] {64, 32}, 2e-3, batch,
        epochs, 3);
    String name = "DL4J EmbeddingLayers, one process, batch " + batch;
    System.out.printf(Locale.ROOT, "%s: %d epochs in %.1f s (%.0f examples/s), held-out AUC %.4f%n", name, epochs,
        f.seconds(), f.examples() / f.seconds(), f.auc());
    return new Result(name, f.auc(), f.seconds(), null, f.examples());
  }

  private static FeatureHasher hasher(ClickThroughData data) {
    List<String> inputs = new ArrayList<>(data.categoricalColumns());
    inputs.addAll(data.numericColumns());
    return new FeatureHasher().setInputCols(inputs.toArray(new String[0]))
        .setCategoricalCols(data.categoricalColumns().toArray(new String[0])).setNumFeatures(1 << 20)
        .setOutputCol("features");
  }

  /** The training rows with the categorical ids as strings (FeatureHasher hashes a number column as a value). */
  private static Dataset<Row> asCategories(ClickThroughData data, Dataset<Row> rows) {
    for (String c : data.categoricalColumns()) {
      rows = rows.withColumn(c, functions.col(c).cast("string"));
    }
    return rows;
  }

  private static Result logisticRegression(ClickThroughData data, Dataset<Row> train, Dataset<Row> test) {
    return peer("Spark LogisticRegression, FeatureHasher 2^20", "regParam", new double[] {1e-5, 1e-4, 1e-3},
        reg -> new LogisticRegression().setRegParam(reg).setMaxIter(100), "rawPrediction", data, train, test);
  }

  private static Result factorizationMachine(ClickThroughData data, Dataset<Row> train, Dataset<Row> test) {
    train.sparkSession().udf().register("sparkps_drop_zeros",
        (org.apache.spark.sql.api.java.UDF1<org.apache.spark.ml.linalg.Vector, org.apache.spark.ml.linalg.Vector>)
            org.apache.spark.ml.linalg.Vector::toSparse, new org.apache.spark.ml.linalg.VectorUDT());
    return peer("Spark FMClassifier (8 factors), FeatureHasher", "stepSize", new double[] {0.01, 0.05},
        step -> new Pipeline().setStages(new PipelineStage[] {new org.apache.spark.ml.feature.SQLTransformer()
            .setStatement(SPARSE), fm(step)}), "probability", data, train, test);
  }

  /** The hashed features without stored zeros, for FMClassifier. */
  private static final String SPARSE = "SELECT *, sparkps_drop_zeros(features) AS sparseFeatures FROM __THIS__";

  /**
   * A Spark ML peer behind the hasher: each of {@code values} of its setting fitted on 90% of the
   * training rows and scored on the other 10%; the best one fitted on all of them, timed, and scored
   * on the held-out rows by {@code scoreCol}.
   */
  private static Result peer(String name, String setting, double[] values,
      java.util.function.DoubleFunction<PipelineStage> classifier, String scoreCol, ClickThroughData data,
      Dataset<Row> train, Dataset<Row> test) {
    Dataset<Row> all = asCategories(data, train);
    Dataset<Row>[] split = all.randomSplit(new double[] {0.9, 0.1}, 7);
    double best = Double.NaN;
    double bestAuc = -1;
    for (double value : values) {
      PipelineModel m = new Pipeline().setStages(new PipelineStage[] {hasher(data), classifier.apply(value)})
          .fit(split[0]);
      double auc = auc(m.transform(split[1]), scoreCol);
      System.out.printf(Locale.ROOT, "%s %s %g: validation AUC %.4f%n", name, setting, value, auc);
      if (auc > bestAuc) {
        bestAuc = auc;
        best = value;
      }
    }
    long start = System.nanoTime();
    PipelineModel m = new Pipeline().setStages(new PipelineStage[] {hasher(data), classifier.apply(best)}).fit(all);
    double seconds = (System.nanoTime() - start) / 1e9;
    double auc = auc(m.transform(asCategories(data, test)), scoreCol);
    System.out.printf(Locale.ROOT, "%s %s %g: %.1f s, held-out AUC %.4f%n", name, setting, best, seconds, auc);
    return new Result(name + " (" + setting + " " + best + ")", auc, seconds, null, 0);
  }

  private static FMClassifier fm(double step) {
    // adamW (Spark's default solver) over full passes; 8 factors as our rows' dim; L2 on all. It
    // reads the hashed vectors without their explicit zeros (see SPARSE): Spark 3.5.9's FM gradient
    // sizes its arrays by the non-zeros but walks every stored entry, and fails on a stored 0
    // ("Index 0 follows 9437184 and is not strictly increasing"), which FeatureHasher writes for a
    // numeric column holding 0.
    return new FMClassifier().setFactorSize(8).setStepSize(step).setMaxIter(30).setRegParam(1e-4)
        .setMiniBatchFraction(1.0).setFeaturesCol("sparseFeatures");
  }
}
