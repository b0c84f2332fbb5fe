package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.datasets.ClickThroughData;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.spec.Consistency;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * An embedding model through the estimator on generated click-through data: categorical columns
 * as tables on two ps, two SYNC workers, then the model scores held-out rows (ids it never saw
 * included) and reaches close to the planted model's AUC; saved in a Pipeline and loaded, it scores
 * the same. Bad settings are refused naming the setting.
 */
class EmbeddingEstimatorTest {
  private static SparkSession spark;
  private static final ClickThroughData DATA = ClickThroughData.builder().optScale(0.001).optSignalIds(100)
      .optSeed(5).build();
  private static final int FIELDS = 26;
  private static final int NUMERIC = 13;
  private static final int DIM = 4;
  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(5, "embedding-estimator-test");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  /** The generator's rows with log1p of the count-like numeric columns, as one would feed Criteo's. */
  private static Dataset<Row> rows(long first, long count) {
    Dataset<Row> rows = DATA.rows(spark, first, count, 2);
    for (String c : DATA.numericColumns()) {
      rows = rows.withColumn(c, functions.log1p(functions.col(c)));
    }
    return rows;
  }

  private static String network(int inputs) {
    return new NeuralNetConfiguration.Builder().seed(3).updater(new Adam(2e-3)).list()
        .layer(new DenseLayer.Builder().nIn(inputs).nOut(32).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(32).nOut(2)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  private static Dl4jEstimator estimator() {
    List<EmbeddingColumn> columns = new ArrayList<>();
    for (String c : DATA.categoricalColumns()) {
      columns.add(EmbeddingColumn.of(c, DIM).withOptimizer("ADAGRAD", 0.1).withMinCount(50));
    }
    return new Dl4jEstimator().setEmbeddingColumns(columns, DATA.numericColumns().toArray(new String[0]))
        .setNetworkJson(network(FIELDS * DIM + NUMERIC)).setNumWorkers(2).setNumPs(2).setBatchSize(128).setEpochs(2)
        .setConsistency(Consistency.SYNC).setSeed(1);
  }

  private static double auc(Dataset<Row> scored) {
    return new BinaryClassificationEvaluator().setRawPredictionCol("probability").evaluate(scored);
  }

  @Test
  void anEmbeddingModel_reachesThePlantedAuc_andSavesAndLoadsInAPipeline() throws Exception {
    Dataset<Row> train = rows(0, 200_000).cache();
    Dataset<Row> test = rows(1_000_000, 20_000).cache();
    double planted = DATA.plantedAuc(DATA.rows(spark, 1_000_000, 20_000, 2));
    Dataset<Row> sample = test.limit(5000).cache();
    // The evaluator reads the tables (creating no row) and reports the AUC on held-out rows as training goes.
    PipelineModel fitted = new Pipeline().setStages(new PipelineStage[] {estimator().setEvaluationData(sample)
        .setEvalEverySeconds(5)}).fit(train);
    Dl4jModel model = (Dl4jModel) fitted.stages()[0];
    assertTrue(model.hasEmbeddings());
    assertTrue(model.toString().contains(", embeddings=true,"), model.toString());
    double auc = auc(fitted.transform(test));
    System.out.printf("embedding model: held-out AUC %.4f, the planted model's %.4f%n", auc, planted);
    java.util.Map<String, Double> last = model.summary().lastEvaluation();
    assertEquals(auc(fitted.transform(sample)), last.get("auc"), 0.003, "the evaluator's last AUC, of the final "
        + "tables and network, on the same rows: " + last);
    assertTrue(auc > planted - 0.035, "AUC " + auc + " against the planted model's " + planted);
    String path = dir.resolve("pipeline").toString();
    fitted.write().overwrite().save(path);
    PipelineModel loaded = PipelineModel.load(path);
    List<Row> before = fitted.transform(test).select("probability").limit(200).collectAsList();
    List<Row> after = loaded.transform(test).select("probability").limit(200).collectAsList();
    assertEquals(before, after, "the loaded model scores as the fitted one");
    train.unpersist();
    test.unpersist();
    sample.unpersist();
  }

  @Test
  void log1pOfTheNumericColumns_trainsAndScoresAsTheColumnsTransformedBeforehand_andASavedModelKeepsIt()
      throws Exception {
    Dataset<Row> raw = DATA.rows(spark, 0, 10_000, 1).cache();
    Dataset<Row> test = DATA.rows(spark, 1_000_000, 2_000, 1).withColumn("rid", functions.monotonically_increasing_id())
        .cache();
    // One worker and one ps: the same steps in the same order, so the same floats either way.
    Dl4jModel transformed = estimator().setNumWorkers(1).setNumPs(1).setEpochs(1)
        .setNumericTransform(io.sparkps.ml.param.NumericTransform.LOG1P).fit(raw);
    Dl4jModel beforehand = estimator().setNumWorkers(1).setNumPs(1).setEpochs(1).fit(log1p(raw));
    List<Row> a = transformed.transform(test).orderBy("rid").select("probability").collectAsList();
    List<Row> b = beforehand.transform(log1p(test)).orderBy("rid").select("probability").collectAsList();
    assertEquals(2_000, a.size());
    assertEquals(0, differing(a, b), "LOG1P of the raw columns is log1p of the columns beforehand");
    Dl4jModel untransformed = estimator().setNumWorkers(1).setNumPs(1).setEpochs(1).fit(raw);
    assertTrue(differing(a, untransformed.transform(test).orderBy("rid").select("probability").collectAsList())
        > 1_000, "the transform changes what the network reads");
    String path = dir.resolve("log1p-model").toString();
    transformed.write().overwrite().save(path);
    assertEquals(0, differing(a, Dl4jModel.load(path).transform(test).orderBy("rid").select("probability")
        .collectAsList()), "the loaded model reads its numeric columns through LOG1P too");
    IllegalArgumentException alone = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetwork("mlp").setNumericTransform(io.sparkps.ml.param.NumericTransform.LOG1P)
            .getConfig());
    assertTrue(alone.getMessage().startsWith("numericTransform is set without embeddingColumns"), alone.getMessage());
    raw.unpersist();
    test.unpersist();
  }

  /** How many of two lists of rows differ, place by place. */
  private static long differing(List<Row> a, List<Row> b) {
    assertEquals(a.size(), b.size());
    return java.util.stream.IntStream.range(0, a.size()).filter(i -> !a.get(i).equals(b.get(i))).count();
  }

  private static Dataset<Row> log1p(Dataset<Row> rows) {
    for (String c : DATA.numericColumns()) {
      rows = rows.withColumn(c, functions.log1p(functions.col(c)));
    }
    return rows;
  }

  @Test
  void anExperimentsTrainSpec_carriesTheEmbeddingColumnsToItsEstimator() {
    List<EmbeddingColumn> columns = List.of(EmbeddingColumn.of("C1", 4).withBuckets(1000),
        EmbeddingColumn.of("C2", 4).withPooling(EmbeddingColumn.Pooling.MEAN));
    Experiment experiment = Experiment.builder().setNetworkJson(network(8 + 2))
        .setTrainSpec(TrainSpec.builder().optEmbeddingColumns(columns, "I1", "I2").build()).optCluster(2, 2).build();
    Dl4jEstimator e = experiment.estimator();
    assertEquals(columns, EmbeddingColumn.fromJson(e.getOrDefault(e.embeddingColumns())));
    assertEquals(List.of("I1", "I2"), List.of(e.getOrDefault(e.numericCols())));
    assertTrue(experiment.trainSpec().toString().contains("embeddingColumns=[C1, C2], numericCols=[I1, I2]"),
        experiment.trainSpec().toString());
    assertTrue(List.of(e.transformSchema(rows(0, 10).schema()).fieldNames()).contains("probability"));
    IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
        () -> TrainSpec.builder().optEmbeddingColumns(columns, "C1").build());
    assertTrue(twice.getMessage().contains("column 'C1' is named twice"), twice.getMessage());
    // The wide part and the term travel too, and a copy of the spec keeps them.
    TrainSpec wide = TrainSpec.builder().optEmbeddingColumns(columns, "I1", "I2").optWidePart(true)
        .optFactorizationTerm(true).build().toBuilder().build();
    Dl4jEstimator w = Experiment.builder().setNetworkJson(network(8 + 2 + 2 + 1)).setTrainSpec(wide).optCluster(2, 2)
        .build().estimator();
    assertTrue((Boolean) w.getOrDefault(w.widePart()) && (Boolean) w.getOrDefault(w.factorizationTerm()));
    assertEquals(8 + 2 + 2 + 1, w.embeddingInputs().width(), "embeddings, numeric values, 2 wide weights, the term");
  }

  @Test
  void aNetworkOfTheWrongWidth_orAMissingColumn_isRefusedNamingIt() {
    Dataset<Row> train = rows(0, 1000);
    IllegalArgumentException width = assertThrows(IllegalArgumentException.class,
        () -> estimator().setNetworkJson(network(10)).fit(train));
    assertTrue(width.getMessage().contains("set its nIn to " + (FIELDS * DIM + NUMERIC)), width.getMessage());
    IllegalArgumentException withTerm = assertThrows(IllegalArgumentException.class,
        () -> estimator().setFactorizationTerm(true).fit(train));
    assertTrue(withTerm.getMessage().contains("numeric columns and the factorization term: set its nIn to "
        + (FIELDS * DIM + NUMERIC + 1)), withTerm.getMessage());
    IllegalArgumentException withWide = assertThrows(IllegalArgumentException.class,
        () -> estimator().setWidePart(true).fit(train));
    assertTrue(withWide.getMessage().contains("numeric columns, 26 wide weights: set its nIn to "
        + (FIELDS * DIM + NUMERIC + FIELDS)), withWide.getMessage());
    IllegalArgumentException wideAlone = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network(4)).setWidePart(true).fit(train));
    assertTrue(wideAlone.getMessage().contains("widePart is set without embeddingColumns"), wideAlone.getMessage());
    IllegalArgumentException asyncAlone = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(network(4)).setAsyncTables(true).fit(train));
    assertTrue(asyncAlone.getMessage().contains("asyncTables is set without embeddingColumns"), asyncAlone.getMessage());
    IllegalArgumentException dims = assertThrows(IllegalArgumentException.class, () -> estimator()
        .setEmbeddingColumns(List.of(EmbeddingColumn.of("C1", 4), EmbeddingColumn.of("C2", 8))).setFactorizationTerm(true)
        .fit(train));
    assertTrue(dims.getMessage().contains("give every embedding column one dim, got [C1 4, C2 8]"), dims.getMessage());
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
        () -> estimator().setEmbeddingColumns(List.of(EmbeddingColumn.of("C99", 4))).fit(train));
    assertTrue(missing.getMessage().contains("the embedding column 'C99' is not in the DataFrame"), missing.getMessage());
    IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
        () -> estimator().setEmbeddingColumns(List.of(EmbeddingColumn.of("I1", 4))).setNetworkJson(network(4))
            .fit(train));
    assertTrue(type.getMessage().contains("the embedding column 'I1' is double; it must hold ids"), type.getMessage());
    Dataset<Row> vectorLabels = new org.apache.spark.ml.feature.VectorAssembler().setInputCols(new String[] {"label"})
        .setOutputCol("oneHot").transform(train);
    IllegalArgumentException label = assertThrows(IllegalArgumentException.class,
        () -> estimator().setLabelCol("oneHot").setNetworkJson(network(FIELDS * DIM + NUMERIC)).fit(vectorLabels));
    assertTrue(label.getMessage().contains("the label column 'oneHot' is vector; an embedding model takes a number"),
        label.getMessage());
  }
}
