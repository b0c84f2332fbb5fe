package io.sparkps.bench;

import io.sparkps.ml.data.IdxDataFrames;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;

/** What the Fashion-MNIST benchmarks share: their Spark, their single-process child JVM, their minibatches. */
final class BenchSupport {
  private BenchSupport() {}

  /** The first {@code examples} Fashion-MNIST training images in 2 cached partitions, one per worker. */
  static Dataset<Row> fashionMnistTrain(SparkSession spark, int examples) throws java.io.IOException {
    return IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).limit(examples).repartition(2)
        .cache();
  }

  /** An embedded Spark of 3 task slots on loopback, its UI off, logging warnings only. */
  static SparkSession localSpark(String app) {
    SparkSession spark = SparkSession.builder().master("local[3]").appName(app).config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    return spark;
  }

  /**
   * Runs {@code main} in a child JVM of this class path with {@code heap} (or the JVM's default), with as many OpenMP and
   * OpenBLAS threads as the machine has cores, and returns its last line that starts with
   * {@code RESULT}, split at spaces; its lines that start with {@code PROGRESS} are printed as they come.
   */
  static String[] childResult(Class<?> main, String heap, String... args) throws Exception {
    String cores = String.valueOf(Runtime.getRuntime().availableProcessors());
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    if (heap != null) {
      command.add(heap);
    }
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().put("OMP_NUM_THREADS", cores);
    pb.environment().put("OPENBLAS_NUM_THREADS", cores);
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String result = null;
    StringBuilder output = new StringBuilder();
    try (java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()))) {
      for (String line; (line = r.readLine()) != null; ) {
        output.append(line).append('\n');
        result = line.startsWith("RESULT ") ? line : result;
        if (line.startsWith("PROGRESS ")) {
          System.out.println(line.substring("PROGRESS ".length())); // the child's progress, as it comes
        }
      }
    }
    if (!p.waitFor(60, java.util.concurrent.TimeUnit.MINUTES) || p.exitValue() != 0 || result == null) {
      throw new IllegalStateException("the single-process child failed:\n" + output);
    }
    return result.split(" ");
  }

  /** The first {@code examples} of images {@code x} (784 values each) and labels {@code y}, shuffled by {@code random}, in full minibatches. */
  static List<DataSet> minibatches(float[] x, float[] y, int examples, int batch, Random random) {
    int[] order = new int[examples];
    for (int i = 0; i < examples; i++) {
      order[i] = i;
    }
    for (int i = examples - 1; i > 0; i--) {
      int j = random.nextInt(i + 1);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    List<DataSet> out = new ArrayList<>();
    for (int start = 0; start + batch <= examples; start += batch) {
      float[] xs = new float[batch * 784];
      float[] labels = new float[batch];
      for (int b = 0; b < batch; b++) {
        System.arraycopy(x, order[start + b] * 784, xs, b * 784, 784);
        labels[b] = y[order[start + b]];
      }
      out.add(new DataSet(Nd4j.create(xs, new long[] {batch, 784}, 'c'), oneHot(labels, 0, batch)));
    }
    return out;
  }

  static INDArray oneHot(float[] labels, int from, int count) {
    float[] y = new float[count * 10];
    for (int i = 0; i < count; i++) {
      y[i * 10 + (int) labels[from + i]] = 1f;
    }
    return Nd4j.create(y, new long[] {count, 10}, 'c');
  }

  static float[] scaled(float[] pixels) {
    float[] out = new float[pixels.length];
    for (int i = 0; i < pixels.length; i++) {
      out[i] = pixels[i] / 255f;
    }
    return out;
  }

  /**
   * Where the run's wall time went: from {@code fit} to the first step any worker recorded, between
   * the first and the last, and from the last to the model ({@code fit}'s start and end in ms).
   */
  static String timeline(List<io.sparkps.spark.TaskProgress> history, long start, long end) {
    long[] t = history.stream().filter(p -> p.step() > 0 && p.timeMillis() > 0).mapToLong(p -> p.timeMillis())
        .sorted().toArray();
    return t.length == 0 ? "no step recorded a time" : String.format(Locale.ROOT,
        "fit to the first step %.2f s, steps %.2f s, the last step to the model %.2f s", (t[0] - start) / 1e3,
        (t[t.length - 1] - t[0]) / 1e3, (end - t[t.length - 1]) / 1e3);
  }

  /** The median of each time metric over the workers' recorded steps: where a step's time went. */
  static String breakdown(List<io.sparkps.spark.TaskProgress> history) {
    StringBuilder out = new StringBuilder();
    for (String metric : List.of("stepMs", "computeMs", "pullMs", "pushMs", "waitMs")) {
      double[] v = history.stream().filter(p -> p.metrics().containsKey(metric))
          .mapToDouble(p -> p.metrics().get(metric)).sorted().toArray();
      if (v.length > 0) {
        out.append(String.format(Locale.ROOT, "%s %.1f  ", metric, v[v.length / 2]));
      }
    }
    return out.toString().trim();
  }

  /** The median of {@code values} (the mean of the middle two when their count is even). */
  static double median(java.util.List<Double> values) {
    double[] a = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
  }
}
