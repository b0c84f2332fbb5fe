package io.sparkps.ml;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.ActivationLayer;
import org.deeplearning4j.nn.conf.layers.BaseOutputLayer;
import org.deeplearning4j.nn.conf.dropout.Dropout;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.DropoutLayer;
import org.deeplearning4j.nn.conf.layers.Layer;
import org.deeplearning4j.nn.conf.layers.LossLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.modelimport.keras.Hdf5Archive;
import org.deeplearning4j.nn.modelimport.keras.KerasLayer;
import org.deeplearning4j.nn.modelimport.keras.KerasModel;
import org.deeplearning4j.nn.modelimport.keras.config.Keras2LayerConfiguration;
import org.deeplearning4j.nn.modelimport.keras.exceptions.InvalidKerasConfigurationException;
import org.deeplearning4j.nn.modelimport.keras.exceptions.UnsupportedKerasConfigurationException;
import org.deeplearning4j.preprocessors.ReshapePreprocessor;
import org.deeplearning4j.nn.modelimport.keras.utils.KerasLayerUtils;
import org.nd4j.linalg.activations.IActivation;
import org.nd4j.linalg.activations.impl.ActivationIdentity;
import org.nd4j.shade.jackson.core.type.TypeReference;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;
import org.nd4j.shade.jackson.databind.node.ObjectNode;

/**
 * Keras models as networks, through DL4J's Keras import: a {@code tf.keras} (Keras 2) model's
 * JSON ({@code model.to_json()}) with its compile settings under {@code "training_config"} (as an
 * {@code .h5} file keeps them), or an {@code .h5} file itself, becomes a DL4J configuration that
 * SparkPS trains like any other. The architecture, the initializers, the loss and the optimizer
 * come across; the weights do not (training starts from the initializers, as a fresh Keras model
 * does).
 *
 * <p>What SparkPS feeds a network differs from Keras in two ways the import bridges: labels are
 * class indexes, one-hot encoded for the softmax (so {@code sparse_categorical_crossentropy} trains
 * as {@code categorical_crossentropy}), and features are a flat vector per row (so an image
 * model's {@code Input(shape=(h, w, c))} reads it reshaped, in Keras's channels-last order).
 *
 * <p>Two faults of DL4J 1.0.0-M2.1's import are mended on the way: a Keras 2 Dropout layer's rate
 * (which it would drop, training with no dropout) and an Embedding's input length (which TF-Keras
 * leaves out and it would take as 1).
 *
 * <p>Anything DL4J cannot import fails here, on the driver before any Spark job, naming the layer
 * or setting at fault and what to use instead.
 */
public final class KerasNetworks {
  private KerasNetworks() {}

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> MODEL_CLASSES = Set.of("Sequential", "Functional", "Model");

  /** Layers DL4J's import does not take that Keras users reach for, and what to use instead. */
  private static final Map<String, String> INSTEAD = Map.ofEntries(
      Map.entry("LayerNormalization", "BatchNormalization"),
      Map.entry("GroupNormalization", "BatchNormalization"),
      Map.entry("UnitNormalization", "BatchNormalization"),
      Map.entry("MultiHeadAttention", "a DL4J configuration built with DL4J's SelfAttentionLayer, given as networkJson"),
      Map.entry("Attention", "a DL4J configuration built with DL4J's SelfAttentionLayer, given as networkJson"),
      Map.entry("Lambda", "built-in layers (custom Python code cannot cross to the JVM)"),
      Map.entry("TFOpLambda", "built-in layers (a TensorFlow operation applied to a tensor, such as x * 2 or "
          + "tf.reshape, cannot cross to the JVM)"),
      Map.entry("Rescaling", "scaling the features column in the DataFrame (Spark ML's MinMaxScaler or a "
          + "column expression) before fitting"),
      Map.entry("Normalization", "Spark ML's StandardScaler on the features column before fitting"),
      Map.entry("StringLookup", "Spark ML's StringIndexer, or SparkPS's embedding columns (embeddingColumns)"),
      Map.entry("IntegerLookup", "SparkPS's embedding columns (embeddingColumns)"),
      Map.entry("Hashing", "SparkPS's embedding columns (embeddingColumns), which hash into buckets"),
      Map.entry("CategoryEncoding", "Spark ML's OneHotEncoder, or SparkPS's embedding columns"),
      Map.entry("TextVectorization", "Spark ML's Tokenizer and CountVectorizer before fitting"),
      Map.entry("Resizing", "images resized before they become the features column"),
      Map.entry("RandomFlip", "augmentation done in the DataFrame before fitting"),
      Map.entry("RandomRotation", "augmentation done in the DataFrame before fitting"));

  private static final String SUPPORTED = "Dense, Conv1D/2D, MaxPooling/AveragePooling, GlobalAveragePooling, "
      + "Dropout, BatchNormalization, Embedding, Flatten, Reshape, Activation, ZeroPadding";

  /** The prefix of the {@code network} Param's value that names a Keras model file. */
  public static final String FILE_PREFIX = "keras:";

  /** Whether {@code spec} names a Keras model file ({@code keras:PATH}). */
  public static boolean isFileSpec(String spec) {
    return spec != null && spec.startsWith(FILE_PREFIX) && spec.length() > FILE_PREFIX.length();
  }

  /** The DL4J configuration of the Keras model file {@code spec} names ({@code keras:PATH}), layers seeded 0. */
  public static String fromFileSpec(String spec, Configuration hadoop) {
    return fromFileSpec(spec, hadoop, 0);
  }

  /** The DL4J configuration of the Keras model file {@code spec} names, its layers seeded with {@code seed}. */
  public static String fromFileSpec(String spec, Configuration hadoop, long seed) {
    if (!isFileSpec(spec)) {
      throw new IllegalArgumentException(spec + ": not a Keras model file (keras:PATH)");
    }
    return toDl4jJson(read(spec.substring(FILE_PREFIX.length()), hadoop), seed);
  }

  /** Whether {@code json} is a Keras model's JSON (rather than a DL4J configuration's). */
  public static boolean isKeras(String json) {
    try {
      JsonNode tree = JSON.readTree(json);
      return tree != null && tree.isObject() && tree.has("class_name") && tree.has("config")
          && !tree.has("confs") && !tree.has("vertices");
    } catch (IOException e) {
      return false;
    }
  }

  /**
   * The Keras model's JSON, compile settings included, of a file on any Hadoop file system: an
   * {@code .h5} file as {@code model.save("model.h5")} writes it, or a {@code .json} file holding
   * what {@link #isKeras} takes.
   *
   * @throws IllegalArgumentException naming the file and what is wrong with it
   */
  public static String read(String path, Configuration hadoop) {
    Path p = new Path(path);
    String lower = path.toLowerCase(Locale.ROOT);
    if (lower.endsWith(".keras")) {
      throw new IllegalArgumentException(path + ": a Keras 3 .keras archive, which DL4J's Keras import does not read. "
          + "Save the model with tf_keras (Keras 2) as HDF5: model.save(\"model.h5\"), or hand the tf_keras model "
          + "object to sparkps.ml.Dl4jEstimator(network=model)");
    }
    try {
      FileSystem fs = p.getFileSystem(hadoop);
      if (fs.isDirectory(p)) {
        throw new IllegalArgumentException("keras:" + path + ": a directory (a TensorFlow SavedModel?), which DL4J's "
            + "Keras import does not read: save the model as HDF5, model.save(\"model.h5\")");
      }
      if (!fs.isFile(p)) {
        throw new IllegalArgumentException("keras:" + path + ": no such file");
      }
      if (lower.endsWith(".json")) {
        try (InputStream in = fs.open(p)) {
          return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
      }
      java.nio.file.Path local = Files.createTempFile("sparkps-keras-", ".h5");
      try {
        fs.copyToLocalFile(false, p, new Path(local.toUri()), true);
        return readH5(path, local.toString());
      } finally {
        Files.deleteIfExists(local);
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("keras:" + path + ": cannot read it (" + e.getMessage() + ")", e);
    }
  }

  private static String readH5(String path, String local) {
    try (Hdf5Archive archive = new Hdf5Archive(local)) {
      if (!archive.hasAttribute("model_config")) {
        throw new IllegalArgumentException("keras:" + path + ": an HDF5 file without a model_config: it holds "
            + "weights only (model.save_weights); save the whole model with model.save(\"model.h5\")");
      }
      ObjectNode model = (ObjectNode) JSON.readTree(archive.readAttributeAsJson("model_config"));
      if (archive.hasAttribute("training_config")) {
        model.set("training_config", JSON.readTree(archive.readAttributeAsJson("training_config")));
      }
      for (String attribute : List.of("keras_version", "backend")) {
        if (archive.hasAttribute(attribute) && !model.has(attribute)) {
          model.put(attribute, archive.readAttributeAsString(attribute));
        }
      }
      return JSON.writeValueAsString(model);
    } catch (UnsupportedKerasConfigurationException | IOException | RuntimeException e) {
      if (e instanceof IllegalArgumentException iae) {
        throw iae;
      }
      throw new IllegalArgumentException("keras:" + path + ": not a Keras HDF5 model file (" + e.getMessage()
          + "); save one with model.save(\"model.h5\")", e);
    }
  }

  /**
   * The DL4J configuration (a MultiLayerConfiguration's JSON for a Sequential model, a
   * ComputationGraphConfiguration's for a functional one) of a Keras model's JSON.
   *
   * @throws IllegalArgumentException naming the layer or setting DL4J cannot import and what to use instead
   */
  public static String toDl4jJson(String kerasJson) {
    return toDl4jJson(kerasJson, 0);
  }

  /**
   * As {@link #toDl4jJson(String)}, with {@code seed} as every layer's seed (what draws the initial
   * weights), so that the same seed gives the same run as it does for DL4J's own configurations.
   */
  public static String toDl4jJson(String kerasJson, long seed) {
    ObjectNode model;
    try {
      JsonNode tree = JSON.readTree(kerasJson);
      if (tree == null || !tree.isObject()) {
        throw new IllegalArgumentException("the Keras model's JSON is not a JSON object");
      }
      model = (ObjectNode) tree.deepCopy();
    } catch (IOException e) {
      throw new IllegalArgumentException("the Keras model's JSON does not parse (" + e.getMessage() + ")", e);
    }
    String kind = model.path("class_name").asText();
    String name = model.path("config").path("name").asText(kind);
    if (!MODEL_CLASSES.contains(kind)) {
      throw new IllegalArgumentException("Keras model '" + name + "' is a " + kind + ": only Sequential and "
          + "functional (keras.Model(inputs, outputs)) models import; subclassed models have no configuration "
          + "to import, rebuild it as a functional model");
    }
    String version = model.path("keras_version").asText("2");
    if (!version.startsWith("2")) {
      throw new IllegalArgumentException("Keras model '" + name + "' was saved by Keras " + version + ": DL4J's Keras "
          + "import reads tf.keras (Keras 2) models; build it with tf_keras (pip install tf-keras, import tf_keras as "
          + "keras) or set TF_USE_LEGACY_KERAS=1 before importing TensorFlow");
    }
    model.put("keras_version", version);
    JsonNode training = model.remove("training_config");
    if (training == null || training.isNull()) {
      throw new IllegalArgumentException("Keras model '" + name + "' is not compiled, so it has no loss or "
          + "optimizer to import: call model.compile(optimizer=\"adam\", loss=\"sparse_categorical_crossentropy\") "
          + "first");
    }
    String trainingJson = trainingConfig(name, training);
    embeddingLengths(model);
    dropoutRates(model);
    String modelJson = model.toString();
    try {
      if (kind.equals("Sequential")) {
        MultiLayerConfiguration conf = new KerasModel().modelBuilder().modelJson(modelJson).trainingJson(trainingJson)
            .enforceTrainingConfig(true).buildSequential().getMultiLayerConfiguration();
        conf.getConfs().forEach(c -> c.setSeed(seed));
        return checked(name, conf, inputShape(model)).toJson();
      }
      ComputationGraphConfiguration conf = new KerasModel().modelBuilder().modelJson(modelJson)
          .trainingJson(trainingJson).enforceTrainingConfig(true).buildModel().getComputationGraphConfiguration();
      conf.getDefaultConfiguration().setSeed(seed);
      conf.getVertices().values().forEach(v -> {
        if (v instanceof LayerVertex lv) {
          lv.getLayerConf().setSeed(seed);
        }
      });
      return checked(name, conf, inputShape(model)).toJson();
    } catch (UnsupportedKerasConfigurationException | InvalidKerasConfigurationException | IOException
        | RuntimeException e) {
      if (e instanceof IllegalArgumentException iae && iae.getMessage() != null
          && iae.getMessage().startsWith("Keras model '")) {
        throw iae;
      }
      throw new IllegalArgumentException(culprit(name, model, e), e);
    }
  }

  /**
   * The compile settings as DL4J's import reads them: the optimizer's class without TF-Keras's
   * {@code Custom>} prefix, the loss as a name, sparse categorical cross-entropy as the one-hot
   * kind (SparkPS one-hot encodes class indexes); settings DL4J would drop silently are refused.
   */
  private static String trainingConfig(String model, JsonNode training) {
    ObjectNode out = JSON.createObjectNode();
    out.put("loss", lossName(model, training.get("loss")));
    JsonNode optimizer = training.get("optimizer_config");
    if (optimizer == null || optimizer.isNull()) {
      throw new IllegalArgumentException("Keras model '" + model + "' has no optimizer in its compile settings: "
          + "compile it with one, e.g. optimizer=\"adam\"");
    }
    String cls = optimizer.path("class_name").asText();
    cls = cls.startsWith("Custom>") ? cls.substring("Custom>".length()) : cls;
    ObjectNode config = optimizer.path("config").isObject() ? ((ObjectNode) optimizer.get("config")).deepCopy()
        : JSON.createObjectNode();
    JsonNode lr = config.get("learning_rate");
    if (lr != null && !lr.isNumber()) {
      throw new IllegalArgumentException("Keras model '" + model + "': the " + cls + " optimizer's learning rate is a "
          + "schedule (" + lr.path("class_name").asText(lr.toString()) + "), which does not import: give the "
          + "optimizer a constant learning rate");
    }
    for (String setting : List.of("clipnorm", "global_clipnorm", "clipvalue", "weight_decay")) {
      JsonNode v = config.get(setting);
      if (v != null && !v.isNull() && !(v.isNumber() && v.asDouble() == 0)) {
        throw new IllegalArgumentException("Keras model '" + model + "': the " + cls + " optimizer's " + setting + "="
            + v + " does not import (DL4J's import would drop it silently): compile without it, or give a DL4J "
            + "configuration as networkJson with its gradient normalization or weight decay set on the layers");
      }
    }
    if (config.path("use_ema").asBoolean(false)) {
      throw new IllegalArgumentException("Keras model '" + model + "': the " + cls + " optimizer's use_ema=True does "
          + "not import: compile without it");
    }
    if (!Set.of("Adam", "SGD", "RMSprop").contains(cls)) {
      throw new IllegalArgumentException("Keras model '" + model + "' is compiled with the " + cls + " optimizer, which "
          + "SparkPS's parameter servers do not apply: compile it with Adam, SGD (plain, or momentum with "
          + "nesterov=True) or RMSprop");
    }
    refuse(model, cls, config, "amsgrad", "Adam with amsgrad=False");
    refuse(model, cls, config, "centered", "RMSprop with centered=False");
    if (cls.equals("RMSprop") && config.path("momentum").asDouble(0) != 0) {
      throw new IllegalArgumentException("Keras model '" + model + "': the RMSprop optimizer's momentum="
          + config.get("momentum") + " does not import: compile with momentum=0.0");
    }
    if (cls.equals("SGD") && config.path("momentum").asDouble(0) != 0 && !config.path("nesterov").asBoolean(false)) {
      throw new IllegalArgumentException("Keras model '" + model + "': the SGD optimizer's momentum="
          + config.get("momentum") + " without nesterov=True does not import (DL4J's import turns SGD into Nesterov "
          + "momentum): compile with SGD(momentum=..., nesterov=True), or plain SGD, or Adam");
    }
    if (!config.has("decay") && !config.has("schedule_decay")) {
      config.put("decay", 0.0); // TF-Keras 2.11+ optimizers have no decay; DL4J's import reads one
    }
    ObjectNode opt = JSON.createObjectNode();
    opt.put("class_name", cls);
    opt.set("config", config);
    out.set("optimizer_config", opt);
    return out.toString();
  }

  private static void refuse(String model, String cls, ObjectNode config, String flag, String instead) {
    if (config.path(flag).asBoolean(false)) {
      throw new IllegalArgumentException("Keras model '" + model + "': the " + cls + " optimizer's " + flag + "=True "
          + "does not import: compile with " + instead);
    }
  }

  private static String lossName(String model, JsonNode loss) {
    if (loss == null || loss.isNull()) {
      throw new IllegalArgumentException("Keras model '" + model + "' has no loss in its compile settings: compile "
          + "it with one, e.g. loss=\"sparse_categorical_crossentropy\"");
    }
    if (loss.isArray() || (loss.isObject() && !loss.has("class_name"))) {
      throw new IllegalArgumentException("Keras model '" + model + "' has a loss per output: SparkPS trains networks "
          + "with one output and one loss");
    }
    String name;
    if (loss.isTextual()) {
      name = loss.asText();
    } else {
      JsonNode config = loss.path("config");
      if (config.path("from_logits").asBoolean(false)) {
        throw new IllegalArgumentException("Keras model '" + model + "': its loss " + loss.path("class_name").asText()
            + " takes logits (from_logits=True), but SparkPS's predictions are probabilities: end the model in a "
            + "softmax (or sigmoid) activation and compile with from_logits=False");
      }
      name = config.path("fn").asText(snake(loss.path("class_name").asText()));
    }
    return name.equals("sparse_categorical_crossentropy") ? "categorical_crossentropy" : name;
  }

  private static String snake(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
  }

  /**
   * The configuration with DL4J's import of the last Dense layer and its loss (a DenseLayer, an
   * ActivationLayer for a separate Keras Activation, then a LossLayer) made one OutputLayer, as
   * SparkPS's networks end; and with a reshape of the flat features for an image input.
   */
  private static MultiLayerConfiguration checked(String model, MultiLayerConfiguration conf, long[] shape) {
    List<NeuralNetConfiguration> confs = conf.getConfs();
    int n = confs.size();
    if (n >= 2 && confs.get(n - 1).getLayer() instanceof LossLayer loss) {
      int dense = n - 2;
      IActivation activation = loss.getActivationFn();
      if (dense > 0 && confs.get(dense).getLayer() instanceof ActivationLayer a && isIdentity(activation)
          && conf.getInputPreProcess(dense) == null) {
        activation = a.getActivationFn();
        dense--;
      }
      if (confs.get(dense).getLayer() instanceof DenseLayer d && (isIdentity(activation) || isIdentity(d.getActivationFn()))) {
        confs.get(dense).setLayer(outputLayer(d, loss, isIdentity(activation) ? d.getActivationFn() : activation));
        while (confs.size() > dense + 1) {
          conf.getInputPreProcessors().remove(confs.size() - 1);
          confs.remove(confs.size() - 1);
        }
      }
    }
    confs.forEach(c -> withoutNoOpDropout(c.getLayer()));
    Layer last = confs.get(confs.size() - 1).getLayer();
    if (!(last instanceof BaseOutputLayer)) {
      throw new IllegalArgumentException("Keras model '" + model + "' ends in a layer DL4J imports as a "
          + last.getClass().getSimpleName() + ", not an output layer: end it in a Dense layer with the "
          + "model's activation (softmax for classes)");
    }
    InputPreProcessor image = flatToImage(shape);
    if (image != null && conf.getInputPreProcess(0) == null) {
      conf.getInputPreProcessors().put(0, image);
    }
    return conf;
  }

  private static ComputationGraphConfiguration checked(String model, ComputationGraphConfiguration conf,
      long[] shape) {
    if (conf.getNetworkInputs().size() != 1 || conf.getNetworkOutputs().size() != 1) {
      throw new IllegalArgumentException("Keras model '" + model + "' has " + conf.getNetworkInputs().size()
          + " inputs and " + conf.getNetworkOutputs().size() + " outputs: SparkPS trains networks with one input "
          + "(the features column) and one output");
    }
    String output = conf.getNetworkOutputs().get(0);
    List<String> feeding = conf.getVertexInputs().get(output);
    if (conf.getVertices().get(output) instanceof LayerVertex lossVertex
        && lossVertex.getLayerConf().getLayer() instanceof LossLayer loss && feeding != null && feeding.size() == 1
        && conf.getVertices().get(feeding.get(0)) instanceof LayerVertex denseVertex
        && denseVertex.getLayerConf().getLayer() instanceof DenseLayer d && isIdentity(loss.getActivationFn())
        && lossVertex.getPreProcessor() == null
        && conf.getVertexInputs().values().stream().filter(in -> in.contains(feeding.get(0))).count() == 1) {
      denseVertex.getLayerConf().setLayer(outputLayer(d, loss, d.getActivationFn()));
      conf.getVertices().remove(output);
      conf.getVertexInputs().remove(output);
      conf.setNetworkOutputs(new ArrayList<>(List.of(feeding.get(0))));
      output = feeding.get(0);
    }
    conf.getVertices().values().forEach(v -> {
      if (v instanceof LayerVertex lv) {
        withoutNoOpDropout(lv.getLayerConf().getLayer());
      }
    });
    GraphVertex out = conf.getVertices().get(output);
    if (!(out instanceof LayerVertex lv) || !(lv.getLayerConf().getLayer() instanceof BaseOutputLayer)) {
      throw new IllegalArgumentException("Keras model '" + model + "' ends in a vertex DL4J imports as "
          + (out instanceof LayerVertex v ? v.getLayerConf().getLayer().getClass().getSimpleName()
              : out == null ? "nothing" : out.getClass().getSimpleName())
          + ", not an output layer: end it in a Dense layer with the model's activation (softmax for classes)");
    }
    InputPreProcessor image = flatToImage(shape);
    String input = conf.getNetworkInputs().get(0);
    for (Map.Entry<String, List<String>> e : conf.getVertexInputs().entrySet()) {
      if (image != null && e.getValue().contains(input) && conf.getVertices().get(e.getKey()) instanceof LayerVertex v
          && v.getPreProcessor() == null) {
        v.setPreProcessor(image);
      }
    }
    return conf;
  }

  /**
   * Drops the dropout DL4J's import puts on every layer with a retain probability of 1 (none): it
   * would still draw and apply a mask each step, and keep the layer off the forward-reuse path.
   */
  private static void withoutNoOpDropout(Layer layer) {
    if (!(layer instanceof DropoutLayer) && layer.getIDropout() instanceof Dropout d && d.getPSchedule() == null
        && d.getP() >= 1.0) {
      layer.setIDropout(null);
    }
  }

  private static boolean isIdentity(IActivation a) {
    return a == null || a instanceof ActivationIdentity;
  }

  /** An OutputLayer with the dense layer's size, initialization, updaters and regularization, and the loss layer's loss. */
  private static OutputLayer outputLayer(DenseLayer d, LossLayer loss, IActivation activation) {
    OutputLayer out = new OutputLayer.Builder(loss.getLossFn()).nIn(d.getNIn()).nOut(d.getNOut()).activation(activation)
        .weightInit(d.getWeightInitFn()).biasInit(d.getBiasInit()).hasBias(d.hasBias()).updater(d.getIUpdater())
        .biasUpdater(d.getBiasUpdater()).name(d.getLayerName()).build();
    out.setIDropout(d.getIDropout());
    out.setRegularization(d.getRegularization());
    out.setRegularizationBias(d.getRegularizationBias());
    out.setGradientNormalization(d.getGradientNormalization());
    out.setGradientNormalizationThreshold(d.getGradientNormalizationThreshold());
    out.setWeightNoise(d.getWeightNoise());
    return out;
  }

  /**
   * Gives each Embedding layer without an {@code input_length} (TF-Keras 2.21 writes none) the
   * length of the model's one-dimensional input: DL4J's import would otherwise take 1, and the
   * layers after a Flatten would be sized for one position.
   */
  private static void embeddingLengths(ObjectNode model) {
    long[] shape = inputShape(model);
    if (shape == null || shape.length != 1 || shape[0] < 1) {
      return;
    }
    for (JsonNode layer : model.path("config").path("layers")) {
      if (layer.path("class_name").asText().equals("Embedding") && layer.path("config") instanceof ObjectNode c
          && (c.path("input_length").isNull() || c.path("input_length").isMissingNode())) {
        c.put("input_length", shape[0]);
        c.putArray("batch_input_shape").addNull().add(shape[0]);
      }
    }
  }

  /**
   * Gives each Dropout layer its rate where DL4J's import reads it: 1.0.0-M2.1 looks for Keras 1's
   * {@code dropout} field, finds none in a Keras 2 layer's config (which says {@code rate}), and
   * would import the layer as one that drops nothing.
   */
  private static void dropoutRates(ObjectNode model) {
    for (JsonNode layer : model.path("config").path("layers")) {
      String cls = layer.path("class_name").asText();
      if ((cls.equals("Dropout") || cls.startsWith("SpatialDropout")) && layer.path("config") instanceof ObjectNode c
          && c.path("rate").isNumber() && !c.has("dropout")) {
        c.put("dropout", c.get("rate").asDouble());
      }
    }
  }

  /** The model's input shape without the minibatch, {@code [h, w, c]} for images; null when it names none. */
  private static long[] inputShape(ObjectNode model) {
    for (JsonNode layer : model.path("config").path("layers")) {
      JsonNode shape = layer.path("config").path("batch_input_shape");
      if (shape.isArray() && shape.size() > 1) {
        long[] out = new long[shape.size() - 1];
        for (int i = 1; i < shape.size(); i++) {
          out[i - 1] = shape.get(i).asLong(-1);
        }
        return out;
      }
    }
    return null;
  }

  /** Flat rows in channels-last order (Keras's) read as images {@code [minibatch, h, w, c]}; null for other inputs. */
  private static InputPreProcessor flatToImage(long[] shape) {
    if (shape == null || shape.length != 3 || shape[0] < 1 || shape[1] < 1 || shape[2] < 1) {
      return null;
    }
    return new ReshapePreprocessor(new long[] {shape[0] * shape[1] * shape[2]}, shape, false, null);
  }

  /** The message for a failed import: the first layer DL4J cannot take, by name and class, and what to use instead. */
  private static String culprit(String model, ObjectNode tree, Exception e) {
    String cause = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    Keras2LayerConfiguration conf = new Keras2LayerConfiguration();
    Map<String, KerasLayer> previous = new HashMap<>();
    for (JsonNode layer : tree.path("config").path("layers")) {
      String cls = layer.path("class_name").asText();
      String name = layer.path("config").path("name").asText(layer.path("name").asText(cls));
      String reason = null;
      try {
        Map<String, Object> map = JSON.convertValue(layer, new TypeReference<Map<String, Object>>() {});
        map.put(conf.getLAYER_FIELD_KERAS_VERSION(), 2);
        KerasLayer imported = KerasLayerUtils.getKerasLayerFromConfig(map, true, conf, Map.of(), Map.of(), previous);
        previous.put(name, imported);
      } catch (UnsupportedKerasConfigurationException | InvalidKerasConfigurationException | RuntimeException le) {
        reason = le.getMessage() == null ? le.getClass().getSimpleName() : le.getMessage();
      }
      if (reason != null || INSTEAD.containsKey(cls)) {
        String instead = INSTEAD.getOrDefault(cls, null);
        return "Keras model '" + model + "': layer '" + name + "' (" + cls + ") does not import into DL4J"
            + (reason == null ? "" : " (" + firstSentence(reason) + ")") + ": use "
            + (instead != null ? instead : "layers DL4J's Keras import takes (" + SUPPORTED + ")")
            + " instead, or give a DL4J configuration as networkJson";
      }
    }
    return "Keras model '" + model + "' does not import into DL4J (" + firstSentence(cause) + "): its layers "
        + "import one by one, so the fault is in how they connect or in its compile settings; SparkPS takes "
        + SUPPORTED + ", with one input and one output";
  }

  private static String firstSentence(String s) {
    String line = s.lines().findFirst().orElse(s).trim();
    int at = line.indexOf(". ");
    return at > 0 ? line.substring(0, at) : line;
  }
}
