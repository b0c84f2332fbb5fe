package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.GraphNet;
import io.sparkps.ml.network.Net;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.BatchNormalization;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.DropoutLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.SubsamplingLayer;
import org.deeplearning4j.preprocessors.ReshapePreprocessor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.impl.ActivationReLU;
import org.nd4j.linalg.activations.impl.ActivationSoftmax;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.learning.config.RmsProp;
import org.nd4j.linalg.lossfunctions.impl.LossMCXENT;

/**
 * Keras models in: the tf.keras 2.21 models of {@code src/test/resources/keras} (written by its
 * {@code make.py}) imported as DL4J networks SparkPS trains, and what does not import refused by
 * layer and setting, before any Spark job.
 */
public class KerasNetworksTest {
  private static SparkSession spark;

  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(4, "keras");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  public static String keras(String name) {
    try (InputStream in = KerasNetworksTest.class.getResourceAsStream("/keras/" + name + ".json")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aSequentialMlp_importsAsTheLayersItNames_endingInOneOutputLayer() {
    String json = KerasNetworks.toDl4jJson(keras("mlp"));
    MultiLayerConfiguration conf = MultiLayerConfiguration.fromJson(json);
    assertEquals(3, conf.getConfs().size(), "Dense, Dropout, and the last Dense with its loss as one layer");
    DenseLayer hidden = assertInstanceOf(DenseLayer.class, conf.getConf(0).getLayer());
    assertEquals(784, hidden.getNIn());
    assertEquals(64, hidden.getNOut());
    assertInstanceOf(ActivationReLU.class, hidden.getActivationFn());
    assertInstanceOf(DropoutLayer.class, conf.getConf(1).getLayer());
    OutputLayer out = assertInstanceOf(OutputLayer.class, conf.getConf(2).getLayer());
    assertEquals(64, out.getNIn());
    assertEquals(10, out.getNOut());
    assertInstanceOf(ActivationSoftmax.class, out.getActivationFn());
    assertInstanceOf(LossMCXENT.class, out.getLossFn(), "sparse categorical cross-entropy on one-hot labels");
    Adam adam = assertInstanceOf(Adam.class, out.getIUpdater());
    assertEquals(0.002, adam.getLearningRate(), 1e-9);
    assertEquals(1e-7, adam.getEpsilon(), 1e-12, "Keras's epsilon, not DL4J's default");

    assertNull(hidden.getIDropout(), "no no-op dropout left on a layer: it would cost a mask per step");
    assertNull(out.getIDropout());
    assertEquals(0.8, ((org.deeplearning4j.nn.conf.dropout.Dropout) conf.getConf(1).getLayer().getIDropout()).getP(),
        1e-9, "Keras's Dropout(0.2) keeps 0.8 of its inputs");

    Net net = Net.fromJson(json);
    assertEquals(784, net.inputWidth());
    assertEquals(784 * 64 + 64 + 64 * 10 + 10, net.params().length(), "Keras's parameter count");
    assertEquals(2, net.reuseForwardPass(false), "both dense layers on the forward-reuse path, as a DL4J MLP's");
    assertTrue(net.classification());
    assertEquals(10, net.outputs());
  }

  @Test
  void theSeed_drawsTheSameInitialWeights_andAnotherSeedOthers() {
    INDArray a = Net.fromJson(KerasNetworks.toDl4jJson(keras("mlp"), 7)).params();
    INDArray b = Net.fromJson(KerasNetworks.toDl4jJson(keras("mlp"), 7)).params();
    INDArray c = Net.fromJson(KerasNetworks.toDl4jJson(keras("mlp"), 8)).params();
    assertEquals(a, b);
    assertTrue(!a.equals(c), "another seed, other weights");
    INDArray g1 = Net.fromJson(KerasNetworks.toDl4jJson(keras("functional"), 7)).params();
    assertEquals(g1, Net.fromJson(KerasNetworks.toDl4jJson(keras("functional"), 7)).params());
  }

  @Test
  void aConvolutionalModel_readsTheFlatFeaturesAsChannelsLastImages() {
    String json = KerasNetworks.toDl4jJson(keras("cnn"));
    MultiLayerConfiguration conf = MultiLayerConfiguration.fromJson(json);
    assertInstanceOf(ConvolutionLayer.class, conf.getConf(0).getLayer());
    ReshapePreprocessor reshape = assertInstanceOf(ReshapePreprocessor.class, conf.getInputPreProcess(0));
    assertArrayEquals(new long[] {784}, reshape.getInputShape());
    assertArrayEquals(new long[] {28, 28, 1}, reshape.getTargetShape());
    assertInstanceOf(BatchNormalization.class, conf.getConf(1).getLayer());
    assertInstanceOf(SubsamplingLayer.class, conf.getConf(2).getLayer());
    assertInstanceOf(RmsProp.class, ((BaseLayer) conf.getConf(0).getLayer()).getIUpdater());

    Net net = Net.fromJson(json);
    assertEquals(784, net.inputWidth());
    // Keras: conv 5x5x1x6+6, batch norm 4x6, conv 3x3x6x8+8, dense 5*5*8*10+10
    assertEquals(156 + 24 + 440 + 2010, net.params().length());
    INDArray out = net.output(Nd4j.rand(DataType.FLOAT, 3, 784));
    assertArrayEquals(new long[] {3, 10}, out.shape());
    assertEquals(3.0, out.sumNumber().doubleValue(), 1e-4, "a softmax per row");
  }

  @Test
  void aFunctionalModel_importsAsAGraphWithOneOutputLayer() {
    String json = KerasNetworks.toDl4jJson(keras("functional"));
    ComputationGraphConfiguration conf = ComputationGraphConfiguration.fromJson(json);
    assertEquals(List.of("classes"), conf.getNetworkOutputs());
    OutputLayer out = assertInstanceOf(OutputLayer.class,
        ((LayerVertex) conf.getVertices().get("classes")).getLayerConf().getLayer());
    Nesterovs sgd = assertInstanceOf(Nesterovs.class, out.getIUpdater());
    assertEquals(0.05, sgd.getLearningRate(), 1e-9);
    assertEquals(0.0, sgd.getMomentum(), 0.0, "plain SGD");
    Net net = Net.fromJson(json);
    assertInstanceOf(GraphNet.class, net);
    assertEquals(784, net.inputWidth());
    assertEquals(784 * 32 + 32 + 4 * 32 + 32 * 10 + 10, net.params().length());
  }

  @Test
  void anEmbeddingModel_takesOneIndexPerPosition() {
    Net net = Net.fromJson(KerasNetworks.toDl4jJson(keras("embedding")));
    assertEquals(4, net.inputWidth(), "Input(shape=(4,)): four indexes, not the 50 rows of the table");
    assertEquals(50 * 3 + 4 * 3 * 2 + 2, net.params().length());
    INDArray out = net.output(Nd4j.createFromArray(new float[][] {{1, 2, 3, 49}, {0, 0, 7, 7}}));
    assertArrayEquals(new long[] {2, 2}, out.shape());
  }

  @Test
  void aSeparateSoftmaxActivation_becomesTheOutputLayers() {
    MultiLayerConfiguration conf = MultiLayerConfiguration.fromJson(KerasNetworks.toDl4jJson(keras(
        "separate_activation")));
    assertEquals(1, conf.getConfs().size());
    OutputLayer out = assertInstanceOf(OutputLayer.class, conf.getConf(0).getLayer());
    assertInstanceOf(ActivationSoftmax.class, out.getActivationFn());
  }

  @Test
  void whatDoesNotImport_isRefusedByLayerOrSettingWithWhatToUseInstead() {
    String ln = assertThrows(IllegalArgumentException.class, () -> KerasNetworks.toDl4jJson(keras("layer_norm")))
        .getMessage();
    assertTrue(ln.contains("layer 'ln' (LayerNormalization) does not import") && ln.contains("use BatchNormalization"),
        ln);
    String logits = assertThrows(IllegalArgumentException.class, () -> KerasNetworks.toDl4jJson(keras("logits")))
        .getMessage();
    assertTrue(logits.contains("from_logits=True") && logits.contains("softmax"), logits);
    String momentum = assertThrows(IllegalArgumentException.class, () -> KerasNetworks.toDl4jJson(keras("momentum")))
        .getMessage();
    assertTrue(momentum.contains("momentum=0.9") && momentum.contains("nesterov=True"), momentum);
    String uncompiled = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.toDl4jJson(keras("mlp").replaceFirst("\"training_config\"", "\"not_it\""))).getMessage();
    assertTrue(uncompiled.contains("Keras model 'mlp' is not compiled") && uncompiled.contains("model.compile("),
        uncompiled);
    String keras3 = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.toDl4jJson(keras("mlp").replaceFirst("\"keras_version\": \"[^\"]*\"",
            "\"keras_version\": \"3.15.1\""))).getMessage();
    assertTrue(keras3.contains("saved by Keras 3.15.1") && keras3.contains("tf_keras"), keras3);
    String nadam = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.toDl4jJson(keras("mlp").replace("Custom>Adam", "Custom>Nadam"))).getMessage();
    assertTrue(nadam.contains("the Nadam optimizer") && nadam.contains("Adam, SGD"), nadam);
  }

  @Test
  void anH5File_isReadFromAnyHadoopFileSystem_andKeras3ArchivesAreRefused() throws IOException {
    Path h5 = dir.resolve("tiny.h5");
    try (InputStream in = KerasNetworksTest.class.getResourceAsStream("/keras/tiny.h5")) {
      Files.copy(in, h5);
    }
    String json = KerasNetworks.fromFileSpec("keras:" + h5.toUri(), new Configuration());
    Net net = Net.fromJson(json);
    assertEquals(8, net.inputWidth());
    assertEquals(8 * 4 + 4 + 4 * 2 + 2, net.params().length());

    String missing = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.fromFileSpec("keras:" + dir.resolve("nope.h5"), new Configuration())).getMessage();
    assertTrue(missing.contains("nope.h5: no such file"), missing);
    String directory = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.fromFileSpec("keras:" + dir, new Configuration())).getMessage();
    assertTrue(directory.contains("a directory (a TensorFlow SavedModel?)"), directory);
    String archive = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.fromFileSpec("keras:" + dir.resolve("m.keras"), new Configuration())).getMessage();
    assertTrue(archive.contains("Keras 3 .keras archive") && archive.contains("model.save(\"model.h5\")"), archive);
    Path weightsOnly = Files.writeString(dir.resolve("notes.h5"), "not HDF5");
    String damaged = assertThrows(IllegalArgumentException.class,
        () -> KerasNetworks.fromFileSpec("keras:" + weightsOnly, new Configuration())).getMessage();
    assertTrue(damaged.contains("not a Keras HDF5 model file"), damaged);
  }

  private static Dataset<Row> points(int rows, long seed) {
    Random random = new Random(seed);
    List<Row> out = new ArrayList<>();
    for (int i = 0; i < rows; i++) {
      int cls = i % 2;
      double[] x = new double[8];
      for (int j = 0; j < 8; j++) {
        x[j] = (cls == 0 ? -1 : 1) * (j < 4 ? 1 : 0.5) + random.nextGaussian() * 0.7;
      }
      out.add(RowFactory.create(Vectors.dense(x), (double) cls));
    }
    StructType schema = new StructType().add("features", new VectorUDT()).add("label", DataTypes.DoubleType);
    return spark.createDataFrame(out, schema);
  }

  @Test
  void theEstimator_trainsAKerasModelFromItsJsonOrItsFile() throws IOException {
    Dataset<Row> data = points(800, 1).cache();
    Dl4jModel fromJson = new Dl4jEstimator().setNetworkJson(keras("separate_activation")).setNumWorkers(2)
        .setBatchSize(16).setEpochs(4).fit(data);
    double accuracy = fromJson.transform(data).filter("prediction = label").count() / 800.0;
    assertTrue(accuracy > 0.9, "accuracy " + accuracy);
    assertInstanceOf(OutputLayer.class, ((org.deeplearning4j.nn.multilayer.MultiLayerNetwork) fromJson.network())
        .getLayerWiseConfigurations().getConf(0).getLayer(), "the model keeps the DL4J network it trained");

    Path h5 = dir.resolve("tiny.h5");
    try (InputStream in = KerasNetworksTest.class.getResourceAsStream("/keras/tiny.h5")) {
      Files.copy(in, h5);
    }
    Dl4jModel fromFile = new Dl4jEstimator().setNetwork("keras:" + h5).setNumWorkers(2).setBatchSize(16)
        .setEpochs(4).fit(data);
    double fileAccuracy = fromFile.transform(data).filter("prediction = label").count() / 800.0;
    assertTrue(fileAccuracy > 0.9, "accuracy " + fileAccuracy);
  }

  @Test
  void aModelThatDoesNotImport_failsBeforeAnySparkJob() {
    Dataset<Row> data = points(64, 2);
    int jobsBefore = spark.sparkContext().statusTracker().getJobIdsForGroup(null).length;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new Dl4jEstimator().setNetworkJson(keras("layer_norm")).fitAsync(data));
    assertTrue(e.getMessage().contains("layer 'ln' (LayerNormalization)"), e.getMessage());
    assertEquals(jobsBefore, spark.sparkContext().statusTracker().getJobIdsForGroup(null).length, "no Spark job ran");
    assertThrows(IllegalArgumentException.class, () -> new Dl4jEstimator().setNetwork("keras"),
        "a bare keras: is neither a preset nor a file");
  }
}
