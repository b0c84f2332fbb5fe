package io.sparkps.bench;

import static io.sparkps.bench.BenchSupport.median;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.FitJob;
import io.sparkps.ml.tracking.MlflowTracking;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
 * What logging every step to MLflow costs. (1) Side by side in rounds: the same Fashion-MNIST training
 * (784-256-10, batch 64, 2 workers, 1 ps, SYNC, every step's metrics recorded) tracked in the MLflow
 * server at {@code trackingUri} and not tracked, taking turns; prints the median examples/s of each and
 * the median of the per-round ratios, and checks that each tracked run logged every step. (2) The cost
 * on the driver's progress thread: 50,000 records of a step's 12 metrics handed to a tracker, per
 * record, divided by (1)'s median step. The server runs on the same machine, so its own work is in (1).
 *
 * <p>Besides the examples/s of whole fits (a tracked fit also waits, at its end, for its MLflow run to be
 * ended), it compares the median step time the chief recorded ({@code stepMs}) side by side: what
 * logging costs a step while training.
 *
 * <p>Arguments: {@code trackingUri [rounds] [examples] [passes]} (default 5, 60000, 1); start the
 * server first ({@code mlflow server --host 127.0.0.1 --port 5000}).
 */
public final class MlflowBenchmark {
  private MlflowBenchmark() {}

  public static void main(String[] args) throws Exception {
    String uri = args[0];
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
    int examples = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
    int passes = args.length > 3 ? Integer.parseInt(args[3]) : 1;
    SparkSession spark = BenchSupport.localSpark("sparkps-mlflow-benchmark");
    try {
      Dataset<Row> train = BenchSupport.fashionMnistTrain(spark, examples);
      long rows = train.count();
      int batch = 64;
      long steps = passes * rows / (2L * batch);
      System.out.printf(Locale.ROOT, "Fashion-MNIST: %d examples, %d steps a worker, %d cores, OMP_NUM_THREADS=%s, "
          + "%d rounds, MLflow at %s%n", rows, steps, Runtime.getRuntime().availableProcessors(),
          System.getenv("OMP_NUM_THREADS"), rounds, uri);
      run(spark, train, batch, steps, uri); // warm-up, untimed
      run(spark, train, batch, steps, "");
      List<Double> tracked = new ArrayList<>();
      List<Double> untracked = new ArrayList<>();
      List<Double> ratios = new ArrayList<>();
      List<Double> stepMs = new ArrayList<>();
      List<Double> stepRatios = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        double[] r = new double[2];
        double[] step = new double[2];
        for (int k = 0; k < 2; k++) {
          int which = (round + k) % 2; // each round starts with the other one
          double[] run = run(spark, train, batch, steps, which == 0 ? uri : "");
          r[which] = steps * 2 * batch / run[0];
          step[which] = run[1];
          if (which == 1) {
            stepMs.add(run[0] * 1000 / steps);
          }
        }
        tracked.add(r[0]);
        untracked.add(r[1]);
        ratios.add(r[0] / r[1]);
        stepRatios.add(step[0] / step[1]);
        System.out.printf(Locale.ROOT, "  round %d: tracked %.0f examples/s, not tracked %.0f (ratio %.4f); median "
            + "stepMs tracked %.3f, not tracked %.3f (ratio %.4f)%n", round, r[0], r[1], r[0] / r[1], step[0], step[1],
            step[0] / step[1]);
      }
      double perRecordNs = recordCost(uri);
      double step = median(stepMs);
      System.out.printf(Locale.ROOT, "%nexamples/s, median of %d rounds: tracked %.0f, not tracked %.0f; median ratio "
          + "%.4f (lowest %.4f, highest %.4f)%n", rounds, median(tracked), median(untracked), median(ratios),
          ratios.stream().mapToDouble(Double::doubleValue).min().orElse(0),
          ratios.stream().mapToDouble(Double::doubleValue).max().orElse(0));
      System.out.printf(Locale.ROOT, "the chief's median step time, tracked over not tracked: median ratio %.4f "
          + "(lowest %.4f, highest %.4f)%n", median(stepRatios), stepRatios.stream().mapToDouble(Double::doubleValue)
          .min().orElse(0), stepRatios.stream().mapToDouble(Double::doubleValue).max().orElse(0));
      System.out.printf(Locale.ROOT, "a step's record handed to the tracker: %.2f us on the driver; a step: %.2f ms "
          + "(wall, per worker); %.3f%% of a step%n", perRecordNs / 1000, step, 100 * perRecordNs / (step * 1e6));
    } finally {
      spark.stop();
      System.exit(0);
    }
  }

  /** A fit's seconds, and the median of the chief's recorded step times (ms). */
  private static double[] run(SparkSession spark, Dataset<Row> train, int batch, long steps, String uri)
      throws Exception {
    var conf = new NeuralNetConfiguration.Builder().seed(7).updater(new Adam(1e-3)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(256).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(256).nOut(10)
            .activation(Activation.SOFTMAX).build()).build();
    Dl4jEstimator estimator = new Dl4jEstimator().setNetworkJson(conf.toJson()).setNumWorkers(2).setNumPs(1)
        .setBatchSize(batch).setMaxSteps(steps).setConsistency(Consistency.SYNC).setSeed(7)
        .setMlflowTrackingUri(uri).setMlflowExperimentName("sparkps-benchmark");
    long t0 = System.nanoTime();
    FitJob job = estimator.fitAsync(train);
    Dl4jModel model = job.join(); // a tracked fit returns once its MLflow run is ended: on the clock
    double seconds = (System.nanoTime() - t0) / 1e9;
    long recorded = model.summary().workerHistory().stream().filter(p -> p.metrics().containsKey("loss")).count();
    if (recorded != 2 * steps) {
      throw new IllegalStateException("recorded " + recorded + " steps of " + 2 * steps);
    }
    if (!uri.isEmpty() && job.mlflowRunId() == null) {
      throw new IllegalStateException("the fit was not tracked in " + uri);
    }
    List<Double> stepMs = new ArrayList<>(model.summary().workerHistory().stream()
        .filter(p -> p.role() == Role.CHIEF && p.metrics().containsKey("stepMs")).map(p -> p.metrics().get("stepMs"))
        .toList());
    return new double[] {seconds, median(stepMs)};
  }

  /** Nanoseconds the driver's progress thread spends handing one step's record (12 metrics) to a tracker. */
  private static double recordCost(String uri) throws Exception {
    MlflowTracking t = MlflowTracking.start(MlflowTracking.Settings.of(uri, "sparkps-benchmark", "record-cost",
        Map.of(), Map.of()), Map.of(), System.getenv());
    int n = 50_000;
    List<TaskProgress> records = new ArrayList<>(n + 5_000);
    for (int i = 0; i < n + 5_000; i++) {
      Map<String, Double> m = new HashMap<>(32);
      m.put("loss", 1.0 / (i + 1));
      for (String k : List.of("epoch", "stepMs", "computeMs", "pullMs", "pushMs", "waitMs", "staleness", "wireBytes",
          "a", "b", "c")) {
        m.put(k, (double) i);
      }
      records.add(new TaskProgress(Role.CHIEF, 0, "h", "1", 0, i, i * 64L, m, "", 0, System.currentTimeMillis()));
    }
    for (int i = 0; i < 5_000; i++) { // untimed, to warm up
      t.onProgress(records.get(i));
    }
    long t0 = System.nanoTime();
    for (int i = 5_000; i < n + 5_000; i++) {
      t.onProgress(records.get(i));
    }
    double perRecord = (System.nanoTime() - t0) / (double) n;
    t.onEnd(JobStatus.SUCCEEDED, null);
    t.awaitEnd(Duration.ofMinutes(5));
    return perRecord;
  }
}
