package io.sparkps.bench;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.IdxFile;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.TaskProgress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.spark.impl.multilayer.SparkDl4jMultiLayer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Wall time to reach 85% and 88% test accuracy on Fashion-MNIST with the MLP 784-512-256-10
 * (Adam 1e-3, 128 examples per minibatch and worker), for: single-process DL4J with all cores
 * (a child JVM with OpenMP threads = cores) and with one thread; SparkPS with 2 workers and 1 ps,
 * SYNC (also with 64 examples per worker, the single process's global batch), ASYNC and SSP
 * (staleness 2), ASYNC and SSP also with the staleness-aware rate; dl4j-spark's parameter averaging and gradient sharing
 * (SharedTrainingMaster), 2 workers; {@code local[4]}, since SparkPS's deferred evaluator takes a task slot
 * too (it sleeps while training runs). Every trainer runs the same number of epochs; the accuracy
 * after them, the same examples for all, is printed too.
 *
 * <p>Evaluation is off the clock everywhere: the single process stops its clock to score the
 * 10,000 test images every quarter epoch; the dl4j-spark trainers are fitted a quarter epoch at a
 * time (from the cached RDD of minibatches) and scored between fits, clock stopped; SparkPS's
 * evaluator is deferred ({@code setEvalDeferred}): it copies the variables every half second and
 * scores the copies after training, each stamped with the time it was read. SparkPS's clock starts
 * at {@code fitAsync} (Spark jobs, reading the cached DataFrame into its workers and the ps launch
 * included); the single process's at its first step, its data already in memory.
 *
 * <p>Arguments: {@code [epochs] [rounds] [trainers]} (default 8, 1, all; trainers is a
 * comma-separated list of parts of their names, or of whole names after {@code =}: {@code =SparkPS SYNC}
 * is that trainer alone, {@code SYNC} also every ASYNC one).
 */
public final class TimeToAccuracyBenchmark {
  static final double[] TARGETS = {0.85, 0.88};
  private static final int BATCH = 128;
  private static final int[] HIDDEN = {512, 256};

  /** Test accuracy reached after {@code seconds} of training and {@code examples} examples. */
  record Point(double seconds, long examples, double accuracy) {}

  private interface Trainer {
    List<Point> run(int epochs) throws Exception;
  }

  /** The data order's seed of the current round, the same for every trainer in it (7 + round - 1). */
  private static long seed = 7;
  private static float[] trainX;
  private static float[] trainY;
  private static INDArray testX;
  private static INDArray testY;

  private TimeToAccuracyBenchmark() {}

  public static void main(String[] args) throws Exception {
    int epochs = args.length > 1 && args[0].equals("--single-process") ? Integer.parseInt(args[1])
        : args.length > 0 ? Integer.parseInt(args[0]) : 8;
    Path dir = IdxDataFrames.FASHION_MNIST;
    IdxFile x = IdxFile.read(dir.resolve("train-images-idx3-ubyte.gz"));
    trainX = BenchSupport.scaled(x.values());
    trainY = IdxFile.read(dir.resolve("train-labels-idx1-ubyte.gz")).values();
    IdxFile tx = IdxFile.read(dir.resolve("t10k-images-idx3-ubyte.gz"));
    testX = Nd4j.create(BenchSupport.scaled(tx.values()), new long[] {tx.items(), 784}, 'c');
    testY = BenchSupport.oneHot(IdxFile.read(dir.resolve("t10k-labels-idx1-ubyte.gz")).values(), 0, tx.items());
    if (args.length > 0 && args[0].equals("--single-process")) {
      seed = Long.parseLong(args[2]);
      singleProcess(1); // warm-up, untimed
      for (Point p : singleProcess(epochs)) {
        System.out.printf(Locale.ROOT, "POINT %f %d %f%n", p.seconds(), p.examples(), p.accuracy());
      }
      System.exit(0);
    }
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    List<String> only = args.length > 2 ? TrainingBenchmark.filters(args[2]) : null;

    SparkSession spark = SparkSession.builder().master("local[4]").appName("sparkps-time-to-accuracy")
        .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    Dataset<Row> train = IdxDataFrames.fashionMnist(spark, dir, "train", 2).repartition(2).cache();
    Dataset<Row> test = IdxDataFrames.fashionMnist(spark, dir, "t10k", 1).cache();
    long rows = train.count();
    test.count();
    System.out.printf(Locale.ROOT, "Fashion-MNIST: %d training examples, %d test; MLP 784-512-256-10, Adam 1e-3, batch "
        + "%d per worker; %d epochs per trainer; %d cores; %d rounds%n", rows, tx.items(), BATCH, epochs,
        Runtime.getRuntime().availableProcessors(), rounds);
    JavaRDD<IndexedBatch> batches = indexedBatches(train, (int) rows);
    Map<String, Trainer> trainers = new LinkedHashMap<>();
    trainers.put("single-process DL4J, all cores", TimeToAccuracyBenchmark::allCores);
    trainers.put("single-process DL4J, 1 thread", TimeToAccuracyBenchmark::singleProcess);
    trainers.put("SparkPS SYNC", e -> sparkps(train, test, e, Consistency.SYNC, false));
    // the single process's global batch: 2 workers x 64
    trainers.put("SparkPS SYNC, 64 per worker", e -> sparkps(train, test, e, Consistency.SYNC, false, BATCH / 2));
    trainers.put("SparkPS ASYNC", e -> sparkps(train, test, e, Consistency.ASYNC, false));
    trainers.put("SparkPS SSP", e -> sparkps(train, test, e, Consistency.SSP, false));
    trainers.put("SparkPS ASYNC, staleness-aware rate", e -> sparkps(train, test, e, Consistency.ASYNC, true));
    trainers.put("SparkPS SSP, staleness-aware rate", e -> sparkps(train, test, e, Consistency.SSP, true));
    // over the shard's loopback socket, as between executors: dense, and sparse with error feedback
    trainers.put(SOCKET, e -> sparkps(train, test, e, Consistency.ASYNC, false, BATCH, 0.0));
    trainers.put(SOCKET + ", sparse 5%", e -> sparkps(train, test, e, Consistency.ASYNC, false, BATCH, 0.05));
    trainers.put(SOCKET + ", sparse 1%", e -> sparkps(train, test, e, Consistency.ASYNC, false, BATCH, 0.01));
    trainers.put("dl4j-spark parameter averaging", e -> segmented(spark, batches, (int) rows, e, false));
    trainers.put("dl4j-spark gradient sharing", e -> segmented(spark, batches, (int) rows, e, true));
    if (only != null) {
      trainers.keySet().removeIf(name -> only.stream().noneMatch(o -> TrainingBenchmark.selects(o, name)));
    }
    Map<String, List<List<Point>>> runs = new LinkedHashMap<>();
    try {
      for (Map.Entry<String, Trainer> t : trainers.entrySet()) {
        if (!t.getKey().startsWith("single")) {
          t.getValue().run(1); // warm-up: JIT and Spark's first jobs over the cached data, untimed
        }
      }
      List<Map.Entry<String, Trainer>> order = new ArrayList<>(trainers.entrySet());
      for (int round = 1; round <= rounds; round++) {
        seed = 7 + round - 1; // rounds differ in their data order, trainers within one do not
        for (Map.Entry<String, Trainer> t : order) {
          List<Point> points = t.getValue().run(epochs);
          runs.computeIfAbsent(t.getKey(), k -> new ArrayList<>()).add(points);
          System.out.printf(Locale.ROOT, "  round %d  %-38s %s%n", round, t.getKey(), AccuracyReport.summary(points));
          if (Boolean.getBoolean("bench.points")) {
            points.forEach(p -> System.out.printf(Locale.ROOT, "    %8.2f s %8d examples %.4f%n", p.seconds(),
                p.examples(), p.accuracy()));
          }
        }
        java.util.Collections.rotate(order, -1);
      }
    } finally {
      spark.stop();
    }
    AccuracyReport.print(runs, epochs, rows, SOCKET);
    System.exit(0); // a barrier stage in local mode leaves a non-daemon timer thread
  }

  static MultiLayerConfiguration network() {
    NeuralNetConfiguration.ListBuilder b = new NeuralNetConfiguration.Builder().seed(42).dataType(DataType.FLOAT)
        .updater(new Adam(1e-3)).list();
    int in = 784;
    for (int h : HIDDEN) {
      b.layer(new DenseLayer.Builder().nIn(in).nOut(h).activation(Activation.RELU).build());
      in = h;
    }
    return b.layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(10)
        .activation(Activation.SOFTMAX).build()).build();
  }

  private static double accuracy(MultiLayerNetwork net) {
    return net.evaluate(new org.nd4j.linalg.dataset.adapter.SingletonDataSetIterator(new DataSet(testX, testY)))
        .accuracy();
  }

  /** DL4J in this JVM, shuffled anew each epoch; the clock stops while it scores every quarter epoch. */
  private static List<Point> singleProcess(int epochs) {
    MultiLayerNetwork net = new MultiLayerNetwork(network());
    net.init();
    int n = trainY.length;
    int steps = n / BATCH;
    int every = Math.max(1, steps / 4);
    List<Point> points = new ArrayList<>();
    Random random = new Random(seed);
    int[] order = java.util.stream.IntStream.range(0, n).toArray();
    float[] xs = new float[BATCH * 784];
    float[] labels = new float[BATCH];
    long clock = 0;
    long examples = 0;
    for (int epoch = 0; epoch < epochs; epoch++) {
      for (int i = n - 1; i > 0; i--) {
        int j = random.nextInt(i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
      for (int s = 0; s < steps; s++) {
        for (int b = 0; b < BATCH; b++) {
          System.arraycopy(trainX, order[s * BATCH + b] * 784, xs, b * 784, 784);
          labels[b] = trainY[order[s * BATCH + b]];
        }
        DataSet d = new DataSet(Nd4j.create(xs, new long[] {BATCH, 784}, 'c'), BenchSupport.oneHot(labels, 0,
            BATCH));
        long t0 = System.nanoTime();
        net.fit(d);
        clock += System.nanoTime() - t0;
        examples += BATCH;
        if ((s + 1) % every == 0 || s == steps - 1) {
          points.add(new Point(clock / 1e9, examples, accuracy(net)));
        }
      }
    }
    return points;
  }

  /** The single process in a child JVM with as many OpenMP and OpenBLAS threads as cores. */
  private static List<Point> allCores(int epochs) throws Exception {
    String cores = String.valueOf(Runtime.getRuntime().availableProcessors());
    ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), TimeToAccuracyBenchmark.class.getName(), "--single-process",
        String.valueOf(epochs), String.valueOf(seed));
    pb.environment().put("OMP_NUM_THREADS", cores);
    pb.environment().put("OPENBLAS_NUM_THREADS", cores);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    List<Point> points = new ArrayList<>();
    List<String> tail = new ArrayList<>();
    try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))) {
      for (String line; (line = r.readLine()) != null; ) {
        if (line.startsWith("POINT ")) {
          String[] f = line.split(" ");
          points.add(new Point(Double.parseDouble(f[1]), Long.parseLong(f[2]), Double.parseDouble(f[3])));
        } else if (tail.size() < 200) {
          tail.add(line);
        }
      }
    }
    if (!p.waitFor(60, java.util.concurrent.TimeUnit.MINUTES) || p.exitValue() != 0 || points.isEmpty()) {
      throw new IllegalStateException("the single-process child failed:\n" + String.join("\n", tail));
    }
    return points;
  }

  private static final String SOCKET = "SparkPS ASYNC, socket";

  /** SparkPS, 2 workers and 1 ps; its deferred evaluator's copies give the points. */
  private static List<Point> sparkps(Dataset<Row> train, Dataset<Row> test, int epochs, Consistency consistency,
      boolean stalenessAware) throws InterruptedException {
    return sparkps(train, test, epochs, consistency, stalenessAware, BATCH);
  }

  private static List<Point> sparkps(Dataset<Row> train, Dataset<Row> test, int epochs, Consistency consistency,
      boolean stalenessAware, int batch) throws InterruptedException {
    return sparkps(train, test, epochs, consistency, stalenessAware, batch, -1);
  }

  /**
   * {@code density} -1: transfers through memory (the ps is in this JVM); 0 or more: over the
   * shard's loopback socket, dense (0) or sparse of that density.
   */
  private static List<Point> sparkps(Dataset<Row> train, Dataset<Row> test, int epochs, Consistency consistency,
      boolean stalenessAware, int batch, double density) throws InterruptedException {
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(network().toJson()).setNumWorkers(2).setNumPs(1)
        .setBatchSize(batch).setEpochs(epochs).setConsistency(consistency).setSeed(seed).setEvalDeferred(true)
        .setEvalEverySeconds(0.5).setStalenessAwareRate(stalenessAware).setSparseTransfers(Math.max(0, density));
    System.setProperty(io.sparkps.ps.PsClient.SAME_JVM_PROPERTY, String.valueOf(density < 0));
    long start = System.currentTimeMillis();
    Dl4jModel model;
    try {
      model = estimator.fitAsync(train, test).join();
    } finally {
      System.clearProperty(io.sparkps.ps.PsClient.SAME_JVM_PROPERTY);
    }
    if (density >= 0) {
      Map<Integer, double[]> last = new java.util.HashMap<>(); // per worker: steps, socket bytes
      for (TaskProgress p : model.summary().workerHistory()) {
        last.merge(p.index(), new double[] {p.step(), p.metrics().getOrDefault("wireBytes", 0.0)},
            (a, b) -> a[0] >= b[0] ? a : b);
      }
      double steps = last.values().stream().mapToDouble(v -> v[0]).sum();
      double bytes = last.values().stream().mapToDouble(v -> v[1]).sum();
      System.out.printf(Locale.ROOT, "    socket bytes: %.3f MB per worker step (%.0f steps)%n", bytes / steps / 1e6, steps);
    }
    long rows = train.count();
    List<Point> points = new ArrayList<>();
    List<TaskProgress> history = model.summary().evaluatorHistory();
    // a SYNC version is a step of both workers; an ASYNC or SSP one is one worker's push
    long perVersion = consistency == Consistency.SYNC ? 2L * batch : batch;
    for (TaskProgress p : history) {
      double seconds = (p.metrics().get("takenAtMillis") - start) / 1000.0;
      long examples = p.step() * perVersion;
      points.add(new Point(seconds, examples, p.metrics().get("accuracy")));
    }
    if (points.isEmpty()) {
      // the evaluator's last copy is taken once training has stopped: it is the final model; without
      // any copy, the final model at the fit's end
      double total = (System.currentTimeMillis() - start) / 1000.0;
      points.add(new Point(total, (long) epochs * rows, accuracy((MultiLayerNetwork) model.network())));
    }
    return points;
  }

  /** A minibatch and its place in its partition. */
  record IndexedBatch(int index, DataSet batch) implements java.io.Serializable {}

  /** The cached DataFrame's 2 partitions cut into minibatches once, numbered within each partition, and cached. */
  private static JavaRDD<IndexedBatch> indexedBatches(Dataset<Row> train, int rows) {
    int perPartition = rows / (2 * BATCH) * BATCH;
    JavaRDD<IndexedBatch> batches = Dl4jSparkPeers.minibatchRdd(train, perPartition, BATCH).mapPartitions(it -> {
      List<IndexedBatch> out = new ArrayList<>();
      int i = 0;
      while (it.hasNext()) {
        out.add(new IndexedBatch(i++, it.next()));
      }
      return out.iterator();
    }).cache();
    batches.count();
    return batches;
  }

  /**
   * dl4j-spark's parameter averaging or gradient sharing, fitted a quarter epoch at a time from the
   * cached minibatches (each partition's batches of that quarter), scored between fits with the
   * clock stopped.
   */
  private static List<Point> segmented(SparkSession spark, JavaRDD<IndexedBatch> batches, int rows, int epochs,
      boolean sharing) {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    int perPartition = rows / (2 * BATCH);
    int quarter = Math.max(1, perPartition / 4);
    SparkDl4jMultiLayer net = new SparkDl4jMultiLayer(jsc, network(), sharing ? Dl4jSparkPeers.sharingMaster(BATCH)
        : Dl4jSparkPeers.averagingMaster(BATCH));
    List<Point> points = new ArrayList<>();
    long clock = 0;
    long examples = 0;
    for (int epoch = 0; epoch < epochs; epoch++) {
      for (int from = 0; from < perPartition; from += quarter) {
        int a = from;
        int b = Math.min(perPartition, from + quarter);
        JavaRDD<DataSet> segment = batches.filter(ib -> ib.index() >= a && ib.index() < b).map(IndexedBatch::batch);
        long t0 = System.nanoTime();
        net.fit(segment);
        clock += System.nanoTime() - t0;
        examples += 2L * (b - a) * BATCH;
        points.add(new Point(clock / 1e9, examples, accuracy(net.getNetwork())));
      }
    }
    return points;
  }
}
