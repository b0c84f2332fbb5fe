package io.sparkps.ml;

import io.sparkps.spark.SparkPsConf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.Prototypes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * How a fit's input reaches its workers: balanced input partitions are grouped per worker with no
 * shuffle (Spark's listener sees no shuffle writes), input that cannot be balanced is shuffled and
 * still trains, and workers that spill their partitions leave no spill file behind after a run
 * that succeeds, fails or is cancelled.
 */
class DataPlacementTest {
  private static SparkSession spark;
  private static final Writes WRITES = new Writes();
  private static Dataset<Row> test;

  @TempDir
  static Path localDir;

  /**
   * Shuffle records written and job descriptions, as Spark's listener bus reports them. A run's
   * barrier stage writes one record per worker (its result goes through a shuffle so that Spark
   * retries the stage); a shuffled input writes every row.
   */
  private static final class Writes extends SparkListener {
    final AtomicLong shuffleRecords = new AtomicLong();
    final List<String> jobs = new CopyOnWriteArrayList<>();

    @Override
    public void onTaskEnd(SparkListenerTaskEnd end) {
      if (end.taskMetrics() != null) {
        shuffleRecords.addAndGet(end.taskMetrics().shuffleWriteMetrics().recordsWritten());
      }
    }

    @Override
    public void onJobStart(SparkListenerJobStart start) {
      jobs.add(String.valueOf(start.properties().getProperty("spark.job.description")));
    }

    void reset() {
      settle();
      shuffleRecords.set(0);
      jobs.clear();
    }
  }

  /** Waits until the listener has seen every event so far. */
  private static void settle() {
    try {
      spark.sparkContext().listenerBus().waitUntilEmpty(TimeUnit.SECONDS.toMillis(30));
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("Spark's listener bus did not drain in 30 s", e);
    }
  }

  @BeforeAll
  static void start() {
    spark = SparkSession.builder().master("local[4]").appName("data-placement").config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", localDir.toString()).getOrCreate();
    spark.sparkContext().addSparkListener(WRITES);
    test = Prototypes.dataFrame(spark, 1000, 99, 1).cache();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @AfterEach
  void defaultsAgain() {
    spark.conf().unset(SparkPsConf.DATA_IN_MEMORY_MAX.key());
    spark.conf().unset(SparkPsConf.DATA_ALWAYS_SHUFFLE.key());
  }

  private static Dl4jEstimator estimator(int epochs) {
    String mlp = new NeuralNetConfiguration.Builder().seed(5).updater(new Adam(0.01)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(32).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(10)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    return new Dl4jEstimator().setNetworkJson(mlp).setNumWorkers(2).setNumPs(1).setBatchSize(50).setEpochs(epochs);
  }

  private static double accuracy(Dl4jModel model) {
    Dataset<Row> out = model.transform(test);
    return (double) out.filter("prediction = label").count() / out.count();
  }

  @Test
  void balancedPartitions_reachTheWorkersWithoutAShuffle_onePartitionIsShuffledAndStillTrains() {
    Dataset<Row> four = Prototypes.dataFrame(spark, 4000, 1, 4);
    WRITES.reset();
    Dl4jModel grouped = estimator(1).fit(four);
    settle();
    assertEquals(2, WRITES.shuffleRecords.get(), "4 balanced partitions for 2 workers need no shuffle: only the "
        + "workers' 2 results go through one");
    double groupedAccuracy = accuracy(grouped);
    assertTrue(groupedAccuracy > 0.9, "accuracy " + groupedAccuracy);

    WRITES.reset();
    Dl4jModel shuffled = estimator(1).fit(Prototypes.dataFrame(spark, 4000, 1, 1));
    settle();
    assertEquals(4000 + 2, WRITES.shuffleRecords.get(), "1 partition for 2 workers is shuffled, every row");
    double shuffledAccuracy = accuracy(shuffled);
    assertTrue(shuffledAccuracy > 0.9, "accuracy " + shuffledAccuracy);
  }

  @Test
  void groupedPartitions_areReadWhereTheyLie_unlessTheyComeFromAnUncachedShuffle() {
    WRITES.reset();
    estimator(1).setMaxSteps(2).fit(Prototypes.dataFrame(spark, 600, 1, 6));
    settle();
    assertEquals(List.of("sparkps ps 0", "sparkps train (2 workers; 6 input partitions on 2 workers without a shuffle, "
        + "rows per worker [300, 300])"), WRITES.jobs.subList(2, 4), "after the 2 jobs of the input checks: " + WRITES.jobs);
    assertEquals(4, WRITES.jobs.size(), "no other job: " + WRITES.jobs);
    assertEquals(2, WRITES.shuffleRecords.get());

    Dataset<Row> reshuffled = Prototypes.dataFrame(spark, 600, 1, 2).repartition(4);
    WRITES.reset();
    estimator(1).setMaxSteps(2).fit(reshuffled);
    settle();
    assertTrue(WRITES.jobs.contains("sparkps train (2 workers)"), "an uncached shuffle's output is shuffled again to "
        + "the workers: " + WRITES.jobs);
    assertTrue(WRITES.shuffleRecords.get() >= 2 * 600 + 2, "its own shuffle and the workers': "
        + WRITES.shuffleRecords.get());
    reshuffled.cache().count();
    WRITES.reset();
    estimator(1).setMaxSteps(2).fit(reshuffled);
    settle();
    assertEquals(2, WRITES.shuffleRecords.get(), "cached, it is read where it lies");
    assertTrue(WRITES.jobs.stream().anyMatch(j -> j.startsWith("sparkps train (2 workers; 4 input partitions")),
        WRITES.jobs.toString());
    reshuffled.unpersist();

    spark.conf().set(SparkPsConf.DATA_ALWAYS_SHUFFLE.key(), "always");
    WRITES.reset();
    estimator(1).setMaxSteps(2).fit(Prototypes.dataFrame(spark, 600, 1, 6));
    settle();
    assertEquals(600 + 2, WRITES.shuffleRecords.get(), SparkPsConf.DATA_ALWAYS_SHUFFLE.key() + "=always shuffles balanced input too");
  }

  @Test
  void badDataSettings_failBeforeLaunch_namingTheSetting() {
    Dataset<Row> data = Prototypes.dataFrame(spark, 100, 1, 2);
    for (String[] bad : new String[][] {{SparkPsConf.DATA_ALWAYS_SHUFFLE.key(), "sometimes", "set it to auto"},
        {SparkPsConf.DATA_IN_MEMORY_MAX.key(), "lots", "give a size such as 128m"},
        {SparkPsConf.DATA_SHUFFLE_WINDOW.key(), "0", "give a number of rows >= 1"},
        {SparkPsConf.TRAIN_REUSE_FORWARD_PASS.key(), "maybe", "set it to true"}}) {
      spark.conf().set(bad[0], bad[1]);
      WRITES.reset();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> estimator(1).fit(data));
      assertEquals(bad[0] + " is '" + bad[1] + "': " + bad[2], e.getMessage().substring(0, (bad[0] + " is '" + bad[1]
          + "': " + bad[2]).length()));
      settle();
      assertEquals(List.of(), WRITES.jobs, "no job ran");
      spark.conf().unset(bad[0]);
    }
    // A mistyped key is not ignored.
    spark.conf().set("spark.sparkps.data.shufle", "always");
    try {
      WRITES.reset();
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> estimator(1).fit(data));
      assertTrue(e.getMessage().startsWith("unknown SparkPS setting 'spark.sparkps.data.shufle': the settings are "),
          e.getMessage());
      settle();
      assertEquals(List.of(), WRITES.jobs, "no job ran");
    } finally {
      spark.conf().unset("spark.sparkps.data.shufle");
    }
  }

  /**
   * The spill files below the local directory. A file that goes away while the tree is walked (what
   * these tests wait for) makes the walk throw NoSuchFileException: it is walked again, up to 100 times.
   */
  private static List<Path> spillFiles() throws IOException {
    for (int attempt = 1; ; attempt++) {
      try (var files = Files.walk(localDir)) {
        return files.filter(f -> f.getFileName().toString().startsWith("sparkps-spill-")).toList();
      } catch (java.io.UncheckedIOException e) {
        if (!(e.getCause() instanceof java.nio.file.NoSuchFileException) || attempt == 100) {
          throw e;
        }
      }
    }
  }

  /** Polls until the spill files are gone (tasks unwind after a run ends), failing after 30 s. */
  private static void assertNoSpillFiles(String after) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!spillFiles().isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
    assertEquals(List.of(), spillFiles(), "spill files left after " + after);
  }

  /** Waits until the run's workers have spill files, while it runs. */
  private static void awaitSpillFiles(FitJob job, int count) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (spillFiles().size() < count && !job.status().isDone() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(count, spillFiles().size(), "spill files while running (" + job.status() + ")");
  }

  @Test
  void spillFiles_areDeletedAfterSuccessFailureAndCancel() throws Exception {
    spark.conf().set(SparkPsConf.DATA_IN_MEMORY_MAX.key(), "0");
    Dataset<Row> data = Prototypes.dataFrame(spark, 4000, 1, 2);

    FitJob ok = estimator(3).fitAsync(data);
    awaitSpillFiles(ok, 2);
    assertTrue(accuracy(ok.get(Duration.ofMinutes(5))) > 0.9);
    assertNoSpillFiles("success");

    // A NaN late in input partition 3 of 4, read in place with another by one worker, which has spilled rows when
    // it meets it: named by its place in the input.
    JavaRDD<Row> withNaN = Prototypes.dataFrame(spark, 4000, 1, 4).javaRDD().mapPartitionsWithIndex((p, rows) -> {
      List<Row> out = new java.util.ArrayList<>();
      rows.forEachRemaining(out::add);
      if (p == 3) {
        double[] x = ((Vector) out.get(900).get(0)).toArray();
        x[3] = Double.NaN;
        out.set(900, RowFactory.create(Vectors.dense(x), out.get(900).get(1)));
      }
      return out.iterator();
    }, true);
    Dataset<Row> bad = spark.createDataFrame(withNaN, IdxDataFrames.schema());
    Exception e = assertThrows(Exception.class, () -> estimator(3).fit(bad));
    assertTrue(String.valueOf(e.getMessage()).contains("holds NaN in row 900 of input partition 3"), e.getMessage());
    assertNoSpillFiles("failure");

    FitJob cancelled = estimator(200).fitAsync(data);
    awaitSpillFiles(cancelled, 2);
    cancelled.cancel();
    assertThrows(Exception.class, () -> cancelled.get(Duration.ofMinutes(2)));
    assertNoSpillFiles("cancel");
  }
}
