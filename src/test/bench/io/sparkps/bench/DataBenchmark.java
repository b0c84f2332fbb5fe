package io.sparkps.bench;

import static io.sparkps.bench.BenchSupport.median;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.FitJob;
import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.Prototypes;
import io.sparkps.ml.datasets.ClickThroughData;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.NumericTransform;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.ExecutorPeaks;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.TrainingJob;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The data path, side by side in one run:
 * <ol>
 *   <li>Spill vs in-memory: Fashion-MNIST, 2 workers + 1 ps on {@code local[3]}, one partition
 *       per worker, 2 epochs; each worker's partition spilled to a file and read back through
 *       mapped shuffle windows ({@code spark.sparkps.data.inMemoryMax=0}), or held in memory.
 *       Training examples/s from each run's first step to its end, and test accuracy.</li>
 *   <li>Time from {@code fit} to the first step on Fashion-MNIST in 4 balanced partitions (2N),
 *       given to the 2 workers without a shuffle ({@code auto}), or shuffled
 *       ({@code spark.sparkps.data.shuffle=always}).</li>
 *   <li>Data 3x a worker's heap: {@code local-cluster} executors with a 768 MiB heap; 2 workers
 *       train one epoch over a generated data set of 800,000 rows (2.5 GB of float32 features),
 *       made in the workers' own tasks, each partition spilled; against the in-memory path on a
 *       sample of 100,000 rows for as many steps. Each worker's peak heap (Spark's executor
 *       metrics) and peak RSS (VmHWM) against its partition.</li>
 *   <li>An embedding model's rows spilled vs in memory: 1,000,000 generated click-through rows of
 *       Criteo's shape (26 categorical columns of dim 8 on AdaGrad, 13 numeric, a 64-32 network on
 *       Adam), 2 ASYNC workers + 1 ps, 256 rows per worker and step, 1 epoch; each worker's
 *       categorical rows written to a spill file and read back a shuffle window at a time
 *       ({@code inMemoryMax=0}), or held in memory. Training examples/s and the fit's seconds,
 *       reading included.</li>
 * </ol>
 * Parts 1, 2 and 4 alternate their two variants for several rounds (the order swapped each round);
 * ratios are medians of per-round ratios. Arguments: {@code [parts] [rounds] [rows of part 3]} (1234, 3,
 * 800000).
 */
public final class DataBenchmark {
  private static final int BATCH = 128;
  /** Pixel noise of part 3's generated data: hard enough that accuracy does not saturate (about 0.7 after 300 steps). */
  private static final double NOISE = 3.0;

  private DataBenchmark() {}

  public static void main(String[] args) {
    try {
      run(args.length > 0 ? args[0] : "1234", args.length > 1 ? Integer.parseInt(args[1]) : 3,
          args.length > 2 ? Integer.parseInt(args[2]) : 800_000);
    } catch (Exception | Error e) {
      e.printStackTrace();
      System.exit(1);
    }
    System.exit(0); // a barrier stage in local mode leaves a non-daemon timer thread
  }

  private static void run(String parts, int rounds, int bigRows) throws Exception {
    System.out.printf(Locale.ROOT, "DataBenchmark %s, %d cores, rounds %d%n", java.time.LocalDate.now(),
        Runtime.getRuntime().availableProcessors(), rounds);
    SparkSession spark = SparkSession.builder().master("local[3]").appName("data-benchmark")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate();
    try {
      if (parts.contains("1")) {
        spillVsMemory(spark, rounds);
      }
      if (parts.contains("2")) {
        firstStep(spark, rounds + 2);
      }
      if (parts.contains("4")) {
        categoricalSpill(spark, rounds);
      }
    } finally {
      spark.stop();
    }
    if (parts.contains("3")) {
      bigData(bigRows);
    }
  }

  private static String mlp(int... hidden) {
    NeuralNetConfiguration.ListBuilder b = new NeuralNetConfiguration.Builder().seed(11).updater(new Adam(1e-3)).list();
    int in = 784;
    for (int h : hidden) {
      b.layer(new DenseLayer.Builder().nIn(in).nOut(h).activation(Activation.RELU).build());
      in = h;
    }
    return b.layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(10)
        .activation(Activation.SOFTMAX).build()).build().toJson();
  }

  /** Test accuracy of a network of {@code json} with parameters {@code params}, on {@code test}'s rows. */
  private static double accuracy(String json, float[] params, Dataset<Row> test) {
    MultiLayerNetwork net = new MultiLayerNetwork(MultiLayerConfiguration.fromJson(json));
    net.init(Nd4j.createFromArray(params).reshape(1, params.length), false);
    List<Row> rows = test.select("features", "label").collectAsList();
    float[][] x = new float[rows.size()][];
    for (int i = 0; i < x.length; i++) {
      double[] v = ((org.apache.spark.ml.linalg.Vector) rows.get(i).get(0)).toArray();
      x[i] = new float[v.length];
      for (int j = 0; j < v.length; j++) {
        x[i][j] = (float) v[j];
      }
    }
    INDArray predicted = net.output(Nd4j.createFromArray(x)).argMax(1);
    int right = 0;
    for (int i = 0; i < x.length; i++) {
      right += predicted.getInt(i) == (int) rows.get(i).getDouble(1) ? 1 : 0;
    }
    return (double) right / x.length;
  }

  /**
   * A fit's timeline (when it was called, its first step, its last; steps as the chief reported
   * them every 20 ms, each report's time taken back by its age) and its final parameters.
   */
  private record Run(long startNanos, long firstStepNanos, long endNanos, long steps, float[] params,
      List<TaskProgress> roles) {
    double trainingExamplesPerSecond() {
      return 2.0 * (steps - 1) * BATCH / ((endNanos - firstStepNanos) / 1e9);
    }

    double secondsToFirstStep() {
      return (firstStepNanos - startNanos) / 1e9;
    }

    double seconds() {
      return (endNanos - startNanos) / 1e9;
    }
  }

  /** Trains with 2 workers + 1 ps through {@link Dl4jTrainer} (the estimator's trainer) with 20 ms progress reports. */
  private static Run train(SparkSession spark, String json, Dataset<Row> data, int epochs, long maxSteps)
      throws Exception {
    AtomicLong first = new AtomicLong();
    AtomicLong last = new AtomicLong();
    AtomicLong steps = new AtomicLong();
    java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
    long start = System.nanoTime();
    TrainingConfig config = TrainingConfig.builder().optConsistency(Consistency.SYNC).optEpochs(epochs)
        .optMaxSteps(maxSteps).optBatchSize(BATCH).optSeed(3).build();
    TrainingJob<float[]> job = Dl4jTrainer.trainAsync(spark, config.clusterSpec()
        .optHeartbeatInterval(Duration.ofMillis(20)).build(), data, json, config);
    job.addListener(new io.sparkps.spark.ProgressListener() {
      private long lastStep;

      @Override
      public void onProgress(TaskProgress p) {
        if (p.role() == Role.CHIEF && p.step() >= 1 && p.step() > lastStep) {
          long at = System.nanoTime() - p.ageMillis() * 1_000_000;
          first.compareAndSet(0, at);
          last.set(at);
          steps.set(p.step());
          lastStep = p.step();
        }
      }

      @Override
      public void onEnd(io.sparkps.spark.JobStatus status, Throwable failure) {
        ended.countDown();
      }
    });
    float[] params = job.get(Duration.ofMinutes(30)).chief();
    if (!ended.await(30, java.util.concurrent.TimeUnit.SECONDS) || first.get() == 0) {
      throw new IllegalStateException("the chief's steps were not reported within 30 s of the end");
    }
    return new Run(start, first.get(), last.get(), steps.get(), params, job.progress());
  }

  /** A timed fit: its training examples/s, and what else to print of it. */
  private record Timed(double examplesPerSecond, String more) {}

  /** Something to run that may throw. */
  private interface Action<T> {
    T run() throws Exception;
  }

  /**
   * Fits with every partition spilled ({@code spark.sparkps.data.inMemoryMax} 0) and held in memory
   * ({@code inMemory}), each path warmed up once untimed, then taking turns for {@code rounds}
   * rounds; prints every fit and the median of the rounds' spilled / in-memory ratios.
   */
  private static void spilledAgainstInMemory(SparkSession spark, int rounds, String inMemory, Action<?> warmUp,
      Action<Timed> fit) throws Exception {
    for (String max : new String[] {"0", inMemory}) {
      spark.conf().set("spark.sparkps.data.inMemoryMax", max);
      warmUp.run();
    }
    List<Double> ratios = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      double[] rate = new double[2];
      for (int k = 0; k < 2; k++) {
        boolean spill = (r + k) % 2 == 0;
        spark.conf().set("spark.sparkps.data.inMemoryMax", spill ? "0" : inMemory);
        Timed t = fit.run();
        rate[spill ? 1 : 0] = t.examplesPerSecond();
        System.out.printf(Locale.ROOT, "  round %d %-9s %8.0f examples/s training, %s%n", r, spill ? "spill" : "in-memory",
            t.examplesPerSecond(), t.more());
      }
      ratios.add(rate[1] / rate[0]);
    }
    spark.conf().unset("spark.sparkps.data.inMemoryMax");
    System.out.printf(Locale.ROOT, "  spill / in-memory examples/s: median %.3f (rounds %s)%n", median(ratios), ratios);
  }

  private static void spillVsMemory(SparkSession spark, int rounds) throws Exception {
    Dataset<Row> train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).cache();
    Dataset<Row> test = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 2).cache();
    System.out.printf(Locale.ROOT, "%n1. spill vs in-memory: Fashion-MNIST %d rows in %d partitions, 784-256-10, "
        + "batch %d, 2 workers, 2 epochs%n", train.count(), train.rdd().getNumPartitions(), BATCH);
    test.count();
    String json = mlp(256);
    spilledAgainstInMemory(spark, rounds, "1g", () -> train(spark, json, train, 1, 100), () -> {
      Run run = train(spark, json, train, 2, 0);
      return new Timed(run.trainingExamplesPerSecond(), String.format(Locale.ROOT, "fit %.1f s, accuracy %.4f",
          run.seconds(), accuracy(json, run.params(), test)));
    });
    train.unpersist();
    test.unpersist();
  }

  /** A click-through fit's training examples/s (first step to last, as the chief reported), seconds and AUC. */
  private record Fit(double examplesPerSecond, double seconds, double auc) {}

  private static Fit fitClicks(ClickThroughData data, Dataset<Row> train, Dataset<Row> test) throws Exception {
    List<EmbeddingColumn> columns = new ArrayList<>();
    for (String c : data.categoricalColumns()) {
      columns.add(EmbeddingColumn.of(c, 8).withOptimizer("ADAGRAD", 0.1).withMinCount(20));
    }
    String json = new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(2e-3)).list()
        .layer(new DenseLayer.Builder().nIn(26 * 8 + 13).nOut(64).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(64).nOut(32).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    AtomicLong first = new AtomicLong();
    AtomicLong last = new AtomicLong();
    AtomicLong steps = new AtomicLong();
    long start = System.nanoTime();
    FitJob job = new Dl4jEstimator().setEmbeddingColumns(columns, data.numericColumns().toArray(new String[0]))
        .setNumericTransform(NumericTransform.LOG1P).setNetworkJson(json).setNumWorkers(2).setNumPs(1)
        .setBatchSize(256).setEpochs(1).setConsistency(Consistency.ASYNC).setSeed(1).fitAsync(train);
    job.addListener(p -> {
      if (p.role() == Role.CHIEF && p.step() >= 1 && p.step() > steps.get()) {
        long at = System.nanoTime() - p.ageMillis() * 1_000_000;
        first.compareAndSet(0, at);
        last.set(at);
        steps.set(p.step());
      }
    });
    Dl4jModel model = job.get(Duration.ofMinutes(30));
    double seconds = (System.nanoTime() - start) / 1e9;
    double auc = new BinaryClassificationEvaluator().setRawPredictionCol("probability").evaluate(model.transform(test));
    return new Fit(2.0 * (steps.get() - 1) * 256 / ((last.get() - first.get()) / 1e9), seconds, auc);
  }

  private static void categoricalSpill(SparkSession spark, int rounds) throws Exception {
    ClickThroughData data = ClickThroughData.builder().optScale(0.001).optSignalIds(100).optSeed(1).build();
    Dataset<Row> train = data.rows(spark, 0, 1_000_000, 2).cache();
    Dataset<Row> test = data.rows(spark, 10_000_000, 50_000, 2).cache();
    System.out.printf(Locale.ROOT, "%n4. an embedding model's rows spilled vs in memory: %d click-through rows in %d "
        + "partitions, 26 fields of dim 8, 64-32, 2 ASYNC workers x 256 + 1 ps, 1 epoch%n", train.count(),
        train.rdd().getNumPartitions());
    test.count();
    spilledAgainstInMemory(spark, rounds, "4g", () -> fitClicks(data, train.limit(100_000), test), () -> {
      Fit fit = fitClicks(data, train, test);
      return new Timed(fit.examplesPerSecond(), String.format(Locale.ROOT, "fit %.1f s, AUC %.4f", fit.seconds(),
          fit.auc()));
    });
    train.unpersist();
    test.unpersist();
  }

  private static void firstStep(SparkSession spark, int rounds) throws Exception {
    Dataset<Row> train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 4).cache();
    System.out.printf(Locale.ROOT, "%n2. fit to first step: Fashion-MNIST %d rows in %d balanced partitions (cached), "
        + "2 workers%n", train.count(), train.rdd().getNumPartitions());
    String json = mlp(256);
    List<Double> grouped = new ArrayList<>();
    List<Double> shuffled = new ArrayList<>();
    List<Double> ratios = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      double[] seconds = new double[2];
      for (int k = 0; k < 2; k++) {
        boolean shuffle = (r + k) % 2 == 0;
        spark.conf().set("spark.sparkps.data.shuffle", shuffle ? "always" : "auto");
        Run run = train(spark, json, train, 1, 5);
        seconds[shuffle ? 1 : 0] = run.secondsToFirstStep();
        (shuffle ? shuffled : grouped).add(run.secondsToFirstStep());
      }
      ratios.add(seconds[1] / seconds[0]);
      System.out.printf(Locale.ROOT, "  round %d: no shuffle %.2f s, shuffle %.2f s%n", r, seconds[0], seconds[1]);
    }
    spark.conf().unset("spark.sparkps.data.shuffle");
    System.out.printf(Locale.ROOT, "  median: no shuffle %.2f s, shuffle %.2f s; shuffle / no shuffle %.2f "
        + "(first round is warm-up and is counted)%n", median(grouped), median(shuffled), median(ratios));
    train.unpersist();
  }

  private static void bigData(int rows) throws Exception {
    int heapMb = 768;
    Path home = Files.createTempDirectory("sparkps-data-benchmark");
    JavaSparkContext sc = LocalClusters.start(home, 3, 1, heapMb, LocalClusters.conf().setAppName("data-benchmark-big")
        .set("spark.executor.metrics.pollingInterval", "100ms"));
    try {
      SparkSession spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
      ExecutorPeaks peaks = new ExecutorPeaks();
      sc.sc().addSparkListener(peaks);
      long bytes = (long) rows * 784 * Float.BYTES;
      System.out.printf(Locale.ROOT, "%n3. data %.2f GB of float32 features (%d rows, generated in the workers' tasks, noise " + NOISE + "), "
          + "2 workers + 1 ps, local-cluster executors with -Xmx%dm, 784-256-10, batch %d, 1 epoch%n", bytes / 1e9, rows,
          heapMb, BATCH);
      Dataset<Row> test = Prototypes.dataFrame(spark, 10_000, 2, 2, NOISE).cache();
      test.count();
      String json = mlp(256);
      long steps = rows / (2L * BATCH);
      int sample = 100_000;
      spark.conf().set("spark.sparkps.data.inMemoryMax", "1g");
      report("in memory, sample of " + sample + " rows, " + steps + " steps", sc, peaks, sample,
          train(spark, json, Prototypes.dataFrame(spark, sample, 1, 2, NOISE), 1, steps), test, json);
      peaks.clear();
      spark.conf().unset("spark.sparkps.data.inMemoryMax");
      report("spilled, all " + rows + " rows, " + steps + " steps", sc, peaks, rows,
          train(spark, json, Prototypes.dataFrame(spark, rows, 1, 2, NOISE), 1, 0), test, json);
    } finally {
      LocalClusters.stop(sc);
    }
  }

  private static void report(String what, JavaSparkContext sc, ExecutorPeaks peaks, long rows, Run run,
      Dataset<Row> test, String json) throws Exception {
    sc.sc().listenerBus().waitUntilEmpty(30_000);
    long partition = rows / 2 * (784 + 10) * Float.BYTES;
    System.out.printf(Locale.ROOT, "  %s: fit %.0f s, accuracy %.4f, %.0f examples/s training%n", what,
        run.seconds(), accuracy(json, run.params(), test), run.trainingExamplesPerSecond());
    for (TaskProgress role : run.roles()) {
      ExecutorPeaks.Peak p = peaks.of(role.executor());
      boolean worker = role.role() == Role.CHIEF || role.role() == Role.WORKER;
      System.out.printf(Locale.ROOT, "    %s %d on executor %s: %s peak heap %d MiB, peak RSS (process lifetime) "
          + "%d MiB%n", role.role().name().toLowerCase(Locale.ROOT), role.index(), role.executor(), worker
          ? "partition " + (partition >> 20) + " MiB," : "", p == null ? -1 : p.heap() >> 20,
          LocalClusters.peakRss(LocalClusters.executorProcess(sc, role.executor())) >> 20);
    }
  }
}
