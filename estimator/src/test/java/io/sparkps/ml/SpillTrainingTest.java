package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.data.Prototypes;
import io.sparkps.ml.datasets.ClickThroughData;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.NumericTransform;
import io.sparkps.spark.ExecutorPeaks;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * A worker whose partition is larger than its executor's heap trains to the end: executors in JVMs
 * of their own ({@code local-cluster}) with a 384 MiB heap, one worker with 150,000 rows of 784
 * features (476 MB of float32 records) made in its own task; and an embedding model's worker with
 * 1,200,000 click-through rows of Criteo's shape (26 categorical and 13 numeric columns, 442 MB as
 * its ids, values and labels), made in its own task too. The partition is spilled, the dense
 * worker's peak heap stays below half of it, and the model learns.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SpillTrainingTest {
  private static final int HEAP_MB = 384;
  private static final int ROWS = 150_000;
  @TempDir
  static Path home;
  private static JavaSparkContext sc;
  private static SparkSession spark;
  private static final ExecutorPeaks PEAKS = new ExecutorPeaks();

  @BeforeAll
  static void start() throws IOException {
    sc = LocalClusters.start(home, 2, 1, HEAP_MB, LocalClusters.conf().setAppName("spill-training")
        .set("spark.executor.metrics.pollingInterval", "100ms")
        .set(io.sparkps.spark.SparkPsConf.DATA_IN_MEMORY_MAX.key(), "32m")
        // Spark reserves 300 MiB of every heap and refuses heaps under 450 MiB; a smaller reserve lets the heap be small.
        .set("spark.testing.reservedMemory", String.valueOf(64L << 20)));
    spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    sc.sc().addSparkListener(PEAKS);
  }

  /** Each test's peaks are its own tasks'. */
  @BeforeEach
  void forgetPeaks() {
    PEAKS.clear();
  }

  @AfterAll
  static void stop() {
    LocalClusters.stop(sc);
  }

  /** First: its executors' heaps hold no other test's garbage when their peaks are read. */
  @Test
  @Order(1)
  void aPartitionLargerThanTheHeap_isSpilled_andTrainsToTheEnd() throws Exception {
    String mlp = new NeuralNetConfiguration.Builder().seed(5).updater(new Adam(0.005)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(32).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(10)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    Dataset<Row> data = Prototypes.dataFrame(spark, ROWS, 1, 1);
    Fitted fitted = fit(new Dl4jEstimator().setNetworkJson(mlp).setNumWorkers(1).setNumPs(1).setBatchSize(256)
        .setEpochs(1), data);
    Dl4jModel model = fitted.model();
    TaskProgress chief = fitted.chief();
    List<String> messages = fitted.messages();
    assertEquals(ROWS / 256, chief.step(), "every step of the epoch ran");
    long partitionBytes = (long) ROWS * (784 + 10) * Float.BYTES;
    assertTrue(partitionBytes > HEAP_MB * 1024L * 1024, "the partition is larger than the heap");
    assertTrue(messages.stream().anyMatch(m -> m.matches("worker 0 spilled its " + ROWS + " rows \\(" + partitionBytes
        / 1_000_000 + " MB\\) to .+: more than spark.sparkps.data.inMemoryMax \\(32 MiB\\)")), messages
        .toString());
    spark.sparkContext().listenerBus().waitUntilEmpty(30_000);
    ExecutorPeaks.Peak peak = PEAKS.of(chief.executor());
    assertTrue(peak != null && peak.heap() > 0, "the worker's executor reported its heap: " + peak);
    long rss = LocalClusters.peakRss(LocalClusters.executorProcess(sc, chief.executor()));
    System.out.printf("partition %d MB in float32, worker heap limit %d MB; worker peak heap %d MB, peak RSS %d MB%n",
        partitionBytes >> 20, HEAP_MB, peak.heap() >> 20, rss >> 20);
    assertTrue(peak.heap() < partitionBytes / 2, "peak heap " + peak + " against a partition of " + partitionBytes);
    Dataset<Row> out = model.transform(Prototypes.dataFrame(spark, 2000, 2, 1));
    double accuracy = (double) out.filter("prediction = label").count() / out.count();
    assertTrue(accuracy > 0.9, "accuracy " + accuracy);
  }

  @Test
  @Order(2)
  void anEmbeddingModelsPartitionLargerThanTheHeap_isSpilled_andTrainsToTheEnd() throws Exception {
    int rows = 1_200_000;
    ClickThroughData click = ClickThroughData.builder().optScale(0.001).optSignalIds(100).optSeed(5).build();
    List<EmbeddingColumn> columns = new ArrayList<>();
    for (String c : click.categoricalColumns()) {
      columns.add(EmbeddingColumn.of(c, 4).withOptimizer("ADAGRAD", 0.1).withMinCount(20));
    }
    String network = new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(2e-3)).list()
        .layer(new DenseLayer.Builder().nIn(26 * 4 + 13).nOut(32).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
    Fitted fitted = fit(new Dl4jEstimator().setEmbeddingColumns(columns, click.numericColumns().toArray(new String[0]))
        .setNumericTransform(NumericTransform.LOG1P).setNetworkJson(network).setNumWorkers(1).setNumPs(1)
        .setBatchSize(2048).setEpochs(1).setCheckpointDir(home.resolve("tables").toUri().toString()),
        click.rows(spark, 0, rows, 1));
    Dl4jModel model = fitted.model();
    TaskProgress chief = fitted.chief();
    List<String> messages = fitted.messages();
    assertEquals(rows / 2048, chief.step(), "every step of the epoch ran");
    // Each row: 26 keys of 8 bytes, 26 column starts of 4, 13 values and a label of 4.
    long partitionBytes = (long) rows * (26 * 8 + 26 * 4 + 13 * 4 + 4);
    assertTrue(partitionBytes > HEAP_MB * 1024L * 1024, "the partition is larger than the heap");
    assertTrue(messages.stream().anyMatch(m -> m.matches("worker 0 spilled its " + rows + " rows \\(4\\d\\d MB\\) to .+: "
        + "more than spark.sparkps.data.inMemoryMax \\(32 MiB\\)")), messages
        .toString());
    // Held in memory, the rows alone would outgrow the heap (the run fails naming inMemoryMax); the
    // heap's peak use is the GC's choice, so the rows a spilled partition holds are counted in
    // CategoricalPartitionTest.
    spark.sparkContext().listenerBus().waitUntilEmpty(30_000);
    ExecutorPeaks.Peak peak = PEAKS.of(chief.executor());
    System.out.printf("categorical partition %d MB, worker heap limit %d MB; worker peak heap %s MB%n",
        partitionBytes >> 20, HEAP_MB, peak == null ? "?" : String.valueOf(peak.heap() >> 20));
    Dataset<Row> test = click.rows(spark, 10_000_000, 20_000, 1);
    double auc = new BinaryClassificationEvaluator().setRawPredictionCol("probability").evaluate(model.transform(test));
    double planted = click.plantedAuc(test);
    System.out.printf("held-out AUC %.4f, the planted model's %.4f%n", auc, planted);
    assertTrue(auc > planted - 0.03, "AUC " + auc + " against the planted model's " + planted);
  }

  /** A fit's model, its chief's last report, and every message its tasks sent. */
  private record Fitted(Dl4jModel model, TaskProgress chief, List<String> messages) {}

  /** Fits {@code data}, at most 10 minutes, keeping the tasks' messages. */
  private static Fitted fit(Dl4jEstimator estimator, Dataset<Row> data) throws Exception {
    List<String> messages = new CopyOnWriteArrayList<>();
    FitJob job = estimator.fitAsync(data);
    job.addListener(p -> {
      if (p.message() != null) {
        messages.add(p.message());
      }
    });
    Dl4jModel model = job.get(Duration.ofMinutes(10));
    TaskProgress chief = job.progress().stream().filter(p -> p.role() == Role.CHIEF).findFirst().orElseThrow();
    return new Fitted(model, chief, messages);
  }
}
