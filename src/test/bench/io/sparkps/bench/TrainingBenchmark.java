package io.sparkps.bench;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.IdxFile;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.Consistency;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.spark.impl.paramavg.ParameterAveragingTrainingMaster;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Trains the same networks on the same Fashion-MNIST examples, one after the other: (a)
 * single-process DL4J with all cores (in a child JVM with OpenMP and OpenBLAS threads equal to
 * the cores, as a user on one machine runs it) and with one thread; (b) SparkPS with 2 workers and
 * 1 ps: SYNC, ASYNC and ASYNC with the staleness-aware rate with bulk data through memory, as in
 * any local Spark; SYNC and ASYNC over the shard's loopback socket, as between executors, in
 * float32 and in bfloat16; (c) dl4j-spark's ParameterAveragingTrainingMaster and (d) its
 * SharedTrainingMaster (gradient sharing), 2 workers, fed from the same cached DataFrame; (e) the
 * floor under them all ({@link GradientFloor}: two threads computing the same gradients and
 * nothing else), which bounds what any of them can reach against another. Prints
 * examples/s (wall time of the training call, Spark launch and data materialization included
 * where the trainer does them; each Spark trainer warmed up once, untimed), test accuracy after
 * the same number of examples and SparkPS's socket bytes per worker step, then the ratios. The
 * trainers take turns for several rounds, each round starting one trainer later; figures are
 * medians over the rounds, ratios medians of the per-round ratios. One OpenMP thread per Spark
 * task.
 *
 * <p>Arguments: {@code [small|large|both] [examples] [rounds] [trainers]} (default both, 60000,
 * 5, all; trainers is a comma-separated list of parts of their names, such as {@code SYNC,sharing}, or of
 * whole names after {@code =}, such as {@code =(b) SparkPS SYNC}).
 */
public final class TrainingBenchmark {
  private record Model(String name, int[] hidden, int batch) {}

  private record Figure(double examplesPerSecond, double accuracy, double seconds, double wireBytesPerStep) {
    Figure(double examplesPerSecond, double accuracy, double seconds) {
      this(examplesPerSecond, accuracy, seconds, Double.NaN);
    }
  }

  private interface Trainer {
    Figure run(MultiLayerConfiguration conf, int examples, int batch) throws Exception;
  }

  private static final String SINGLE = "(a) single-process DL4J, all cores";
  private static final String SINGLE_1 = "(a) single-process DL4J, 1 thread";
  private static final String AVERAGING = "(c) dl4j-spark parameter averaging";
  private static final String SHARING = "(d) dl4j-spark gradient sharing";
  private static final String FLOOR = "(e) gradients alone, 2 threads";
  private static final String FLOOR_REUSE = "(e) gradients alone, workers' backprop";
  private static final String FLOOR_1 = "(e) gradients alone, 1 thread, workers' backprop";
  private static final List<String> SPARKPS = List.of("(b) SparkPS SYNC", "(b) SparkPS ASYNC",
      "(b) SparkPS ASYNC, staleness-aware", "(b) SparkPS SYNC, socket", "(b) SparkPS ASYNC, socket",
      "(b) SparkPS SYNC, socket, bf16", "(b) SparkPS ASYNC, socket, bf16", "(b) SparkPS ASYNC, socket, sparse 1%",
      "(b) SparkPS ASYNC, socket, sparse 5%", "(b) SparkPS SYNC, socket, accumulate 2",
      "(b) SparkPS SYNC, socket, accumulate 4", "(b) SparkPS SYNC, socket, accumulate 5",
      "(b) SparkPS ASYNC, socket, accumulate 5", "(b) SparkPS SYNC, socket, DL4J backprop",
      "(b) SparkPS SYNC, socket, accumulate 5, DL4J backprop", "(b) SparkPS SYNC, socket, transfers between passes",
      "(b) SparkPS ASYNC, socket, transfers between passes", "(b) SparkPS SYNC, socket, overlapped transfers",
      "(b) SparkPS ASYNC, socket, overlapped transfers", "(b) SparkPS SYNC, socket, 10 Gb/s link, transfers between passes",
      "(b) SparkPS SYNC, socket, 10 Gb/s link, overlapped transfers",
      "(b) SparkPS ASYNC, socket, 10 Gb/s link, transfers between passes",
      "(b) SparkPS ASYNC, socket, 10 Gb/s link, overlapped transfers", "(b) SparkPS SYNC, socket, 10 Gb/s link, bf16",
      "(b) SparkPS SYNC, socket, 1 worker, 10 Gb/s link, transfers between passes",
      "(b) SparkPS SYNC, socket, 1 worker, 10 Gb/s link, overlapped transfers");

  private static List<String> only; // trainers selected by one of these (see selects); all when null

  /** A comma-separated list of trainer filters; a comma followed by a space is part of a name. */
  static List<String> filters(String list) {
    return List.of(list.split(",(?! )"));
  }

  /** Whether a trainer filter selects {@code name}: "=whole name" exactly, anything else as a part of it. */
  static boolean selects(String filter, String name) {
    return filter.startsWith("=") ? name.equals(filter.substring(1)) : name.contains(filter);
  }

  private static float[] trainX;
  private static float[] trainY;
  private static INDArray testX;
  private static INDArray testY;

  private TrainingBenchmark() {}

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "both";
    int examples = args.length > 1 ? Integer.parseInt(args[1]) : 60_000;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    only = args.length > 3 && !args[0].equals("--single-process") ? filters(args[3]) : null;
    Path dir = IdxDataFrames.FASHION_MNIST;
    IdxFile x = IdxFile.read(dir.resolve("train-images-idx3-ubyte.gz"));
    IdxFile y = IdxFile.read(dir.resolve("train-labels-idx1-ubyte.gz"));
    trainX = BenchSupport.scaled(x.values());
    trainY = y.values();
    IdxFile tx = IdxFile.read(dir.resolve("t10k-images-idx3-ubyte.gz"));
    testX = Nd4j.create(BenchSupport.scaled(tx.values()), new long[] {tx.items(), 784}, 'c');
    testY = BenchSupport.oneHot(IdxFile.read(dir.resolve("t10k-labels-idx1-ubyte.gz")).values(), 0, tx.items());
    if (which.equals("--single-process")) {
      // A child JVM of allCores(): the single-process baseline with its own OpenMP thread count.
      int[] hidden = java.util.Arrays.stream(args[3].split(",")).mapToInt(Integer::parseInt).toArray();
      singleProcess(network(hidden), 8 * rounds, rounds); // warm-up, untimed (here the third argument is the batch)
      Figure f = singleProcess(network(hidden), examples, rounds);
      System.out.printf(Locale.ROOT, "RESULT %f %f %f%n", f.examplesPerSecond(), f.accuracy(), f.seconds());
      System.exit(0);
    }

    SparkSession spark = BenchSupport.localSpark("sparkps-training-benchmark");
    Dataset<Row> train = IdxDataFrames.fashionMnist(spark, dir, "train", 2).limit(examples).repartition(2).cache();
    long rows = train.count();
    System.out.printf(Locale.ROOT, "Fashion-MNIST: %d training examples, %d test; %d cores, OMP_NUM_THREADS=%s, "
        + "%d rounds%n", rows, tx.items(), Runtime.getRuntime().availableProcessors(), System.getenv("OMP_NUM_THREADS"),
        rounds);
    List<Model> models = new ArrayList<>();
    if (!which.equals("large")) {
      models.add(new Model("784-256-10, batch 64", new int[] {256}, 64));
    }
    if (!which.equals("small")) {
      models.add(new Model("784-1024-1024-10, batch 256", new int[] {1024, 1024}, 256));
    }
    try {
      for (Model m : models) {
        run(spark, train, (int) rows, m, rounds);
      }
    } finally {
      spark.stop();
    }
    System.exit(0); // a barrier stage in local mode leaves a non-daemon timer thread
  }

  private static void run(SparkSession spark, Dataset<Row> train, int examples, Model m, int rounds) throws Exception {
    System.out.printf(Locale.ROOT, "%n== %s, %d examples per trainer ==%n", m.name(), examples);
    MultiLayerConfiguration conf = network(m.hidden());
    Map<String, Trainer> trainers = new LinkedHashMap<>();
    trainers.put(SINGLE, (c, n, b) -> allCores(m.hidden(), n, b));
    trainers.put(SINGLE_1, TrainingBenchmark::singleProcess);
    for (String name : SPARKPS) { // "(b) SparkPS CONSISTENCY[, socket][, option]"
      String[] parts = name.substring("(b) SparkPS ".length()).split(", ", 2);
      boolean socket = parts.length > 1 && parts[1].startsWith("socket");
      String option = parts.length < 2 ? "" : socket ? parts[1].substring("socket".length()).replaceFirst("^, ", "")
          : parts[1];
      trainers.put(name, (c, n, b) -> sparkps(c, train, n, b, Consistency.valueOf(parts[0]), !socket, option));
    }
    trainers.put(AVERAGING, (c, n, b) -> parameterAveraging(spark, train, c, n, b));
    trainers.put(SHARING, (c, n, b) -> gradientSharing(spark, train, c, n, b));
    for (boolean workers : new boolean[] {false, true}) {
      trainers.put(workers ? FLOOR_REUSE : FLOOR, (c, n, b) -> {
        int steps = n / (2 * b); // each worker's steps, as SparkPS takes them
        double seconds = GradientFloor.seconds(c, minibatches(2 * steps * b, b, 7), 2, workers);
        return new Figure(2.0 * steps * b / seconds, Double.NaN, seconds);
      });
    }
    trainers.put(FLOOR_1, (c, n, b) -> { // the floor of a single worker, whose ps has the other core
      int steps = n / (2 * b);
      double seconds = GradientFloor.seconds(c, minibatches(steps * b, b, 7), 1, true);
      return new Figure(1.0 * steps * b / seconds, Double.NaN, seconds);
    });
    if (only != null) {
      trainers.keySet().removeIf(name -> only.stream().noneMatch(o -> selects(o, name)));
    }
    // Warm-up, not timed: a short run of each Spark trainer, so that the JIT and Spark's first jobs
    // over the cached data do not land in whichever measured run comes first.
    for (Map.Entry<String, Trainer> t : trainers.entrySet()) {
      if (!t.getKey().startsWith("(a)")) {
        t.getValue().run(conf, 4 * m.batch(), m.batch());
      }
    }
    Map<String, List<Figure>> figures = new LinkedHashMap<>();
    List<Map.Entry<String, Trainer>> order = new ArrayList<>(trainers.entrySet());
    for (int round = 1; round <= rounds; round++) {
      for (Map.Entry<String, Trainer> t : order) {
        Figure f = t.getValue().run(conf, examples, m.batch());
        figures.computeIfAbsent(t.getKey(), k -> new ArrayList<>()).add(f);
        System.out.printf(Locale.ROOT, "  round %d  %-54s %8.0f examples/s  accuracy %.4f  %6.1f s%n", round,
            t.getKey(), f.examplesPerSecond(), f.accuracy(), f.seconds());
      }
      java.util.Collections.rotate(order, -1); // the order shifts by one trainer each round
    }
    System.out.printf(Locale.ROOT, "%-54s %12s %10s %9s %16s   (medians of %d rounds)%n", "trainer", "examples/s",
        "accuracy", "seconds", "socket MB/step", rounds);
    figures.forEach((name, list) -> System.out.printf(Locale.ROOT, "%-54s %12.0f %10s %9.1f %16s%n", name,
        median(list, Figure::examplesPerSecond), Double.isNaN(list.get(0).accuracy()) ? "-"
            : String.format(Locale.ROOT, "%.4f", median(list, Figure::accuracy)), median(list, Figure::seconds),
        Double.isNaN(list.get(0).wireBytesPerStep()) ? "-" : String.format(Locale.ROOT, "%.2f",
            median(list, Figure::wireBytesPerStep) / 1e6)));
    System.out.println("ratios (median of per-round ratios, min-max):");
    for (String name : SPARKPS) {
      if (!figures.containsKey(name)) {
        continue;
      }
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-54s", name));
      java.util.Set<String> peers = new java.util.LinkedHashSet<>(name.contains("1 worker") ? List.of(FLOOR_1)
          : List.of(SINGLE, SINGLE_1, AVERAGING, SHARING, FLOOR, FLOOR_REUSE));
      if (name.contains("socket, ")) {
        peers.add(name.substring(0, name.indexOf("socket, ") + 6)); // the same trainer with dense float32 transfers
      }
      if (name.endsWith("overlapped transfers")) { // against moving whole networks between the passes
        peers.add(name.replace("overlapped transfers", "transfers between passes"));
      }
      if (name.endsWith(", DL4J backprop")) {
        peers.add(name.substring(0, name.length() - ", DL4J backprop".length())); // with the workers' backprop
      }
      for (String peer : peers) {
        if (figures.containsKey(peer)) {
          line.append("  ").append(ratio(figures.get(name), figures.get(peer))).append(" vs ")
              .append(peer.substring(4));
        }
      }
      System.out.println(line);
    }
    for (String floor : List.of(FLOOR, FLOOR_REUSE)) {
      if (figures.containsKey(floor) && figures.containsKey(AVERAGING)) {
        System.out.println("  the most a trainer with " + (floor.equals(FLOOR) ? "DL4J's" : "the workers'")
            + " backprop can reach against parameter averaging here (its gradients alone vs it): "
            + ratio(figures.get(floor), figures.get(AVERAGING)));
      }
    }
  }

  private static double median(List<Figure> list, java.util.function.ToDoubleFunction<Figure> value) {
    double[] v = list.stream().mapToDouble(value).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static String ratio(List<Figure> a, List<Figure> b) {
    List<Figure> r = new ArrayList<>();
    for (int i = 0; i < a.size(); i++) {
      r.add(new Figure(a.get(i).examplesPerSecond() / b.get(i).examplesPerSecond(), 0, 0));
    }
    double lo = r.stream().mapToDouble(Figure::examplesPerSecond).min().orElse(0);
    double hi = r.stream().mapToDouble(Figure::examplesPerSecond).max().orElse(0);
    return String.format(Locale.ROOT, "%5.2fx (%.2f-%.2f)", median(r, Figure::examplesPerSecond), lo, hi);
  }

  private static MultiLayerConfiguration network(int[] hidden) {
    NeuralNetConfiguration.ListBuilder b = new NeuralNetConfiguration.Builder().seed(42).dataType(DataType.FLOAT)
        .updater(new Adam(1e-3)).list();
    int in = 784;
    for (int h : hidden) {
      b.layer(new DenseLayer.Builder().nIn(in).nOut(h).activation(Activation.RELU).build());
      in = h;
    }
    return b.layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(10)
        .activation(Activation.SOFTMAX).build()).build();
  }

  private static Figure singleProcess(MultiLayerConfiguration conf, int examples, int batch) {
    MultiLayerNetwork net = new MultiLayerNetwork(conf.clone());
    net.init();
    List<DataSet> batches = minibatches(examples, batch, 7);
    long t0 = System.nanoTime();
    for (DataSet d : batches) {
      net.fit(d);
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    return new Figure(batches.size() * (double) batch / seconds, accuracy(net), seconds);
  }

  /**
   * Single-process DL4J with as many OpenMP (and OpenBLAS) threads as the machine has cores, as
   * a user training on one machine runs it: in a child JVM of its own, since this one runs with
   * one thread per Spark task. Timed inside the child, around the training loop alone.
   */
  private static Figure allCores(int[] hidden, int examples, int batch) throws Exception {
    String[] f = BenchSupport.childResult(TrainingBenchmark.class, null, "--single-process", String.valueOf(examples),
        String.valueOf(batch), java.util.Arrays.stream(hidden).mapToObj(String::valueOf)
            .collect(java.util.stream.Collectors.joining(",")));
    return new Figure(Double.parseDouble(f[1]), Double.parseDouble(f[2]), Double.parseDouble(f[3]));
  }

  /**
   * SparkPS; {@code sameJvm} false sends bulk data over the shard's loopback socket, as between
   * executors; {@code option} "bf16" turns bfloat16 transfers on, "sparse P%" sparse transfers of
   * density P%, "staleness-aware" the staleness-aware rate, "accumulate K" gradient accumulation
   * over K minibatches; ending in "DL4J backprop", the workers' dense layers keep DL4J's own
   * backward pass instead of reusing the forward pass; "transfers between passes" and "overlapped
   * transfers" set the overlap of transfers with the passes off and on (by default it is off here, where
   * the ps shares the workers' host), after "G Gb/s link, " with the shard's bulk connections paced
   * as if it sat behind a link of G gigabits a second each way ({@link
   * io.sparkps.ps.bulk.BulkClient#SIMULATED_LINK_PROPERTY}); first "1 worker, ", a single worker
   * (whose ps then has the other core to itself) takes as many steps as each of two would. The
   * figure carries the socket bytes per worker step.
   */
  private static Figure sparkps(MultiLayerConfiguration conf, Dataset<Row> train, int examples, int batch,
      Consistency consistency, boolean sameJvm, String option) {
    if (option.startsWith("1 worker, ")) { // half the examples: as many steps as each of two workers takes
      return sparkps(conf, train, examples / 2, batch, consistency, sameJvm, option.substring("1 worker, ".length()), 1);
    }
    return sparkps(conf, train, examples, batch, consistency, sameJvm, option, 2);
  }

  /** As above, with {@code workers} workers taking {@code examples / (workers * batch)} steps each. */
  private static Figure sparkps(MultiLayerConfiguration conf, Dataset<Row> train, int examples, int batch,
      Consistency consistency, boolean sameJvm, String linkAndOption, int workers) {
    String option = linkAndOption;
    java.util.regex.Matcher link = java.util.regex.Pattern.compile("([0-9.]+) Gb/s link, (.*)").matcher(option);
    if (link.matches()) {
      System.setProperty(io.sparkps.ps.bulk.BulkClient.SIMULATED_LINK_PROPERTY, link.group(1));
      option = link.group(2);
    }
    long steps = examples / ((long) workers * batch);
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(conf.toJson()).setNumWorkers(workers).setNumPs(1)
        .setBatchSize(batch).setMaxSteps(steps).setConsistency(consistency).setSeed(7)
        .setBf16Transfers(option.equals("bf16")).setStalenessAwareRate(option.equals("staleness-aware"))
        .setSparseTransfers(option.startsWith("sparse ") ? Double.parseDouble(option.substring(7).replace("%", "")) / 100
            : 0)
        .setGradientAccumulation(option.startsWith("accumulate ") ? Integer.parseInt(option.split("[ ,]")[1]) : 1);
    System.setProperty(PsClient.SAME_JVM_PROPERTY, String.valueOf(sameJvm));
    if (option.endsWith("DL4J backprop")) {
      train.sparkSession().conf().set(io.sparkps.ml.network.BenchDenseBackprop.conf(), "false");
    }
    if (option.equals("transfers between passes") || option.equals("overlapped transfers")) {
      train.sparkSession().conf().set(io.sparkps.spark.SparkPsConf.TRAIN_OVERLAP_TRANSFERS.key(),
          String.valueOf(option.equals("overlapped transfers")));
    }
    try {
      long wall0 = System.currentTimeMillis();
      long t0 = System.nanoTime();
      Dl4jModel model = estimator.fit(train);
      double seconds = (System.nanoTime() - t0) / 1e9;
      long wall1 = System.currentTimeMillis();
      Map<Integer, Double> wire = new java.util.HashMap<>();
      for (io.sparkps.spark.TaskProgress p : model.summary().workerHistory()) {
        wire.merge(p.index(), p.metrics().getOrDefault("wireBytes", 0.0), Math::max);
      }
      double perStep = wire.values().stream().mapToDouble(Double::doubleValue).sum() / ((double) workers * steps);
      System.out.println("    per step (workers' medians): " + BenchSupport.breakdown(model.summary().workerHistory()));
      System.out.println("    " + BenchSupport.timeline(model.summary().workerHistory(), wall0, wall1));
      return new Figure(steps * workers * batch / seconds, accuracy((MultiLayerNetwork) model.network()), seconds, perStep);
    } finally {
      System.clearProperty(PsClient.SAME_JVM_PROPERTY);
      System.clearProperty(io.sparkps.ps.bulk.BulkClient.SIMULATED_LINK_PROPERTY);
      train.sparkSession().conf().unset(io.sparkps.ml.network.BenchDenseBackprop.conf());
      train.sparkSession().conf().unset(io.sparkps.spark.SparkPsConf.TRAIN_OVERLAP_TRANSFERS.key());
    }
  }

  /** dl4j-spark's parameter averaging ({@link Dl4jSparkPeers}), timed around its {@code fit}. */
  private static Figure parameterAveraging(SparkSession spark, Dataset<Row> train, MultiLayerConfiguration conf,
      int examples, int batch) {
    return figure(Dl4jSparkPeers.fit(spark, train, conf, examples, batch, Dl4jSparkPeers.averagingMaster(batch)));
  }

  /** dl4j-spark's gradient sharing ({@link Dl4jSparkPeers}), timed around its {@code fit}. */
  private static Figure gradientSharing(SparkSession spark, Dataset<Row> train, MultiLayerConfiguration conf,
      int examples, int batch) {
    return figure(Dl4jSparkPeers.fit(spark, train, conf, examples, batch, Dl4jSparkPeers.sharingMaster(batch)));
  }

  private static Figure figure(Dl4jSparkPeers.Fitted f) {
    return new Figure(f.examples() / f.seconds(), accuracy(f.net()), f.seconds());
  }

  static List<DataSet> minibatches(int examples, int batch, long seed) {
    return BenchSupport.minibatches(trainX, trainY, examples, batch, new Random(seed));
  }

  private static double accuracy(MultiLayerNetwork net) {
    return net.evaluate(new org.nd4j.linalg.dataset.adapter.SingletonDataSetIterator(new DataSet(testX, testY)))
        .accuracy();
  }
}
