package io.sparkps.bench;

import static io.sparkps.bench.BenchSupport.median;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.SparkPsConf;
import io.sparkps.spark.TrainingCluster;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * What recording every step costs. (1) Side by side in rounds: the same Fashion-MNIST training
 * (784-256-10, batch 64, 2 workers, 1 ps, SYNC) with a worker's metrics recorded every step (the
 * default) and every 1,000,000 steps (only the last), taking turns; prints the median examples/s
 * of each and the median of the per-round ratios. (2) The cost itself, measured where it is paid:
 * a worker of a real run (real coordinator, heartbeats over gRPC) times 200,000 reports of a
 * step's 12 metrics, map included, and the benchmark divides it by (1)'s median step time.
 *
 * <p>Arguments: {@code [rounds] [examples]} (default 5, 60000).
 */
public final class MetricsBenchmark {
  private MetricsBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    int examples = args.length > 1 ? Integer.parseInt(args[1]) : 60_000;
    SparkSession spark = BenchSupport.localSpark("sparkps-metrics-benchmark");
    try {
      Dataset<Row> train = BenchSupport.fashionMnistTrain(spark, examples);
      long rows = train.count();
      int batch = 64;
      long steps = rows / (2L * batch);
      System.out.printf(Locale.ROOT, "Fashion-MNIST: %d examples, %d steps a worker, %d cores, OMP_NUM_THREADS=%s, "
          + "%d rounds%n", rows, steps, Runtime.getRuntime().availableProcessors(), System.getenv("OMP_NUM_THREADS"), rounds);
      run(spark, train, batch, steps, 1); // warm-up, untimed
      Map<String, List<Double>> rate = new HashMap<>();
      List<Double> ratios = new ArrayList<>();
      List<Double> stepMs = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        double[] r = new double[2];
        for (int k = 0; k < 2; k++) {
          int which = (round + k) % 2; // each round starts with the other one
          double seconds = run(spark, train, batch, steps, which == 0 ? 1 : 1_000_000);
          r[which] = steps * 2 * batch / seconds;
          if (which == 0) {
            stepMs.add(seconds * 1000 / steps);
          }
        }
        rate.computeIfAbsent("every step", x -> new ArrayList<>()).add(r[0]);
        rate.computeIfAbsent("last step only", x -> new ArrayList<>()).add(r[1]);
        ratios.add(r[0] / r[1]);
        System.out.printf(Locale.ROOT, "  round %d: every step %.0f examples/s, last step only %.0f (ratio %.4f)%n",
            round, r[0], r[1], r[0] / r[1]);
      }
      double perReportNs = reportCost(spark);
      double step = median(stepMs);
      System.out.printf(Locale.ROOT, "%nexamples/s, median of %d rounds: every step %.0f, last step only %.0f; "
          + "median ratio %.4f%n", rounds, median(rate.get("every step")), median(rate.get("last step only")),
          median(ratios));
      System.out.printf(Locale.ROOT, "a report of a step's 12 metrics: %.2f us on the worker; a step: %.2f ms "
          + "(wall, per worker); recording every step costs %.3f%% of a step%n", perReportNs / 1000, step,
          100 * perReportNs / (step * 1e6));
    } finally {
      spark.stop();
      System.exit(0);
    }
  }

  private static double run(SparkSession spark, Dataset<Row> train, int batch, long steps, int every) {
    spark.conf().set(SparkPsConf.METRICS_EVERY_STEPS.key(), String.valueOf(every));
    var conf = new NeuralNetConfiguration.Builder().seed(7).updater(new Adam(1e-3)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(256).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(256).nOut(10)
            .activation(Activation.SOFTMAX).build()).build();
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(conf.toJson()).setNumWorkers(2).setNumPs(1)
        .setBatchSize(batch).setMaxSteps(steps).setConsistency(Consistency.SYNC).setSeed(7);
    long t0 = System.nanoTime();
    Dl4jModel model = estimator.fit(train);
    double seconds = (System.nanoTime() - t0) / 1e9;
    long recorded = model.summary().workerHistory().stream().filter(p -> p.metrics().containsKey("loss")).count();
    if (recorded != (every == 1 ? 2 * steps : 2)) {
      throw new IllegalStateException("metrics every " + every + " steps recorded " + recorded + " steps");
    }
    spark.conf().unset(SparkPsConf.METRICS_EVERY_STEPS.key());
    return seconds;
  }

  /** Nanoseconds a worker of a real run spends on one report of 12 metrics (map made and report sent). */
  private static double reportCost(SparkSession spark) throws Exception {
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    ClusterSpec spec = ClusterSpec.builder().setNumPs(1).setNumWorkers(1).build();
    return new TrainingCluster(sc, spec).run(sc.parallelize(List.of(1), 1), ctx -> {
      int n = 200_000;
      long t0 = 0;
      for (int i = -20_000; i < n; i++) { // 20,000 untimed to warm up
        if (i == 0) {
          t0 = System.nanoTime();
        }
        Map<String, Double> m = new HashMap<>(32);
        m.put("loss", 1.0 / (i + 30_000));
        for (String k : List.of("epoch", "stepMs", "computeMs", "pullMs", "pushMs", "waitMs", "staleness", "wireBytes",
            "a", "b", "c")) {
          m.put(k, (double) i);
        }
        ctx.progress().report(i + 20_000, i, m);
      }
      return (System.nanoTime() - t0) / (double) n;
    }).chief();
  }
}
