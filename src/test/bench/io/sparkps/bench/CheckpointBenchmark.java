package io.sparkps.bench;

import static io.sparkps.bench.BenchSupport.median;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ps.spec.Consistency;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
 * What checkpoints on by default cost a run. Side by side in rounds, taking turns (each round
 * starts with the next one): the same Fashion-MNIST training (2 workers, 1 ps, batch 64) with
 * checkpoints off ({@code checkpointDir none}), with the defaults (the fit's own directory, the
 * automatic interval) and with the fixed interval of 100 steps the estimator had before; prints
 * each one's examples/s (whole fit, launch included) and the median of the per-round ratios to the
 * run without checkpoints.
 *
 * <p>Arguments: {@code [rounds] [epochs] [small|large] [SYNC|ASYNC]} (default 5, 2, small, SYNC):
 * small is 784-256-10, large 784-1024-1024-10 (Adam's state triples what a save writes).
 */
public final class CheckpointBenchmark {
  private CheckpointBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    int epochs = args.length > 1 ? Integer.parseInt(args[1]) : 2;
    boolean large = args.length > 2 && args[2].equals("large");
    Consistency consistency = args.length > 3 ? Consistency.valueOf(args[3]) : Consistency.SYNC;
    SparkSession spark = BenchSupport.localSpark("sparkps-checkpoint-benchmark");
    Path fixedDirs = Files.createTempDirectory("sparkps-checkpoint-benchmark");
    try {
      Dataset<Row> train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).repartition(2)
          .cache();
      long rows = train.count();
      System.out.printf(Locale.ROOT, "Fashion-MNIST: %d examples, %d epochs, %s model, %s, %d cores, "
          + "OMP_NUM_THREADS=%s, %d rounds%n", rows, epochs, large ? "large" : "small", consistency,
          Runtime.getRuntime().availableProcessors(), System.getenv("OMP_NUM_THREADS"), rounds);
      Map<String, Dl4jEstimator> trainers = new LinkedHashMap<>();
      trainers.put("off", estimator(large, epochs, consistency).setCheckpointDir("none"));
      trainers.put("defaults", estimator(large, epochs, consistency));
      trainers.put("every 100 steps", estimator(large, epochs, consistency).setCheckpointInterval(100));
      estimator(large, 1, consistency).setCheckpointDir("none").setMaxSteps(50).fit(train); // warm-up, untimed
      List<String> names = new ArrayList<>(trainers.keySet());
      Map<String, List<Double>> rates = new LinkedHashMap<>();
      Map<String, List<Double>> ratios = new LinkedHashMap<>();
      Map<String, List<Double>> saveShares = new LinkedHashMap<>();
      for (int round = 0; round < rounds; round++) {
        Map<String, Double> r = new LinkedHashMap<>();
        for (int k = 0; k < names.size(); k++) {
          String name = names.get((round + k) % names.size());
          Dl4jEstimator e = trainers.get(name);
          if (name.equals("every 100 steps")) {
            e.setCheckpointDir(fixedDirs.resolve("round-" + round).toUri().toString());
          }
          long t0 = System.nanoTime();
          io.sparkps.ml.Dl4jModel model = e.fit(train);
          double seconds = (System.nanoTime() - t0) / 1e9;
          r.put(name, rows * epochs / seconds);
          // What the chief's saves between steps took, as its records say (the last save at the end is not among them).
          double[] saves = model.summary().workerHistory().stream().filter(p -> p.index() == 0)
              .map(p -> p.metrics().get("checkpointMs")).filter(java.util.Objects::nonNull)
              .mapToDouble(Double::doubleValue).toArray();
          double savedMs = java.util.Arrays.stream(saves).sum();
          saveShares.computeIfAbsent(name, x -> new ArrayList<>()).add(savedMs / (seconds * 1000));
          System.out.printf(Locale.ROOT, "    %s: %.1f s, %d saves between steps taking %.0f ms (%.2f%% of the fit)%n",
              name, seconds, saves.length, savedMs, 100 * savedMs / (seconds * 1000));
        }
        StringBuilder line = new StringBuilder("  round " + round + ":");
        for (String name : names) {
          rates.computeIfAbsent(name, x -> new ArrayList<>()).add(r.get(name));
          ratios.computeIfAbsent(name, x -> new ArrayList<>()).add(r.get(name) / r.get("off"));
          line.append(String.format(Locale.ROOT, " %s %.0f examples/s (%.4f);", name, r.get(name),
              r.get(name) / r.get("off")));
        }
        System.out.println(line);
      }
      System.out.printf(Locale.ROOT, "%nmedian of %d rounds (examples/s, ratio to checkpoints off, min-max):%n", rounds);
      for (String name : names) {
        System.out.printf(Locale.ROOT, "  %-16s %6.0f  %.4f (%.4f-%.4f); the chief's saves: %.2f%% of the fit "
            + "(%.2f-%.2f%%)%n", name, median(rates.get(name)), median(ratios.get(name)), min(ratios.get(name)),
            max(ratios.get(name)), 100 * median(saveShares.get(name)), 100 * min(saveShares.get(name)),
            100 * max(saveShares.get(name)));
      }
    } catch (Throwable t) {
      t.printStackTrace();
      spark.stop();
      System.exit(1);
    }
    spark.stop();
    System.exit(0);
  }

  private static Dl4jEstimator estimator(boolean large, int epochs, Consistency consistency) {
    NeuralNetConfiguration.ListBuilder b = new NeuralNetConfiguration.Builder().seed(7).updater(new Adam(1e-3)).list();
    int in = 784;
    for (int width : large ? new int[] {1024, 1024} : new int[] {256}) {
      b.layer(new DenseLayer.Builder().nIn(in).nOut(width).activation(Activation.RELU).build());
      in = width;
    }
    b.layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(10).activation(Activation.SOFTMAX)
        .build());
    return new Dl4jEstimator().setNetworkJson(b.build().toJson()).setNumWorkers(2).setNumPs(1).setBatchSize(64)
        .setEpochs(epochs).setConsistency(consistency).setSeed(7);
  }

  private static double min(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
  }

  private static double max(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
  }
}
