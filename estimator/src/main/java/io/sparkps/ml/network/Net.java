package io.sparkps.ml.network;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.BaseOutputLayer;
import org.deeplearning4j.nn.conf.layers.EmbeddingLayer;
import org.deeplearning4j.nn.conf.layers.EmbeddingSequenceLayer;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.preprocessors.ReshapePreprocessor;
import org.nd4j.linalg.activations.impl.ActivationIdentity;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.api.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.lossfunctions.ILossFunction;
import org.nd4j.linalg.lossfunctions.impl.LossBinaryXENT;
import org.nd4j.linalg.lossfunctions.impl.LossFMeasure;
import org.nd4j.linalg.lossfunctions.impl.LossHinge;
import org.nd4j.linalg.lossfunctions.impl.LossMCXENT;
import org.nd4j.linalg.lossfunctions.impl.LossSquaredHinge;
import org.nd4j.shade.jackson.databind.JsonNode;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * A DL4J network of either kind, a {@code MultiLayerNetwork} or a {@code ComputationGraph} with
 * one input and one output, seen the same way by training, evaluation and inference: its
 * parameters with their layers, input width, outputs, task (from the output layer's loss), a
 * gradient step and batched output.
 */
public abstract sealed class Net permits Net.Layers, GraphNet {
  /** One DL4J parameter: the variable name, the layer's key for it, the layer, a view into the flat parameters. */
  public record Parameter(String name, String key, Layer layer, INDArray view) {}

  /** Builds and initializes the network of a MultiLayerConfiguration's or ComputationGraphConfiguration's JSON. */
  public static Net fromJson(String json) {
    JsonNode tree;
    try {
      tree = new ObjectMapper().readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("networkJson is not JSON (" + e.getMessage() + "): set it to conf.toJson() of a "
          + "DL4J MultiLayerConfiguration or ComputationGraphConfiguration", e);
    }
    if (tree != null && tree.has("vertices")) {
      ComputationGraphConfiguration conf = ComputationGraphConfiguration.fromJson(json);
      checkSize(declaredParams(conf));
      ComputationGraph graph = new ComputationGraph(conf);
      graph.init();
      GemmConvolution.install(graph);
      return new GraphNet(graph);
    }
    if (tree != null && tree.has("confs")) {
      MultiLayerConfiguration conf = MultiLayerConfiguration.fromJson(json);
      checkSize(declaredParams(conf));
      MultiLayerNetwork net = new MultiLayerNetwork(conf);
      net.init();
      GemmConvolution.install(net.getLayers());
      return new Layers(net);
    }
    throw new IllegalArgumentException("networkJson is neither a MultiLayerConfiguration nor a "
        + "ComputationGraphConfiguration: set it to conf.toJson() of one");
  }

  /** Most parameters a network may declare: one float array (DL4J's flat parameter vector) holds them. */
  static final long MAX_PARAMS = Integer.MAX_VALUE - 8;

  /**
   * The parameters the network of {@code json} declares, counted from its layers' configurations
   * without building it (a file's network may be crafted to allocate more than any heap holds).
   */
  public static long declaredParams(String json) {
    JsonNode tree;
    try {
      tree = new ObjectMapper().readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("networkJson is not JSON (" + e.getMessage() + ")", e);
    }
    if (tree != null && tree.has("vertices")) {
      return declaredParams(ComputationGraphConfiguration.fromJson(json));
    }
    if (tree != null && tree.has("confs")) {
      return declaredParams(MultiLayerConfiguration.fromJson(json));
    }
    throw new IllegalArgumentException("networkJson is neither a MultiLayerConfiguration nor a "
        + "ComputationGraphConfiguration: set it to conf.toJson() of one");
  }

  private static long declaredParams(MultiLayerConfiguration conf) {
    long n = 0;
    for (org.deeplearning4j.nn.conf.NeuralNetConfiguration c : conf.getConfs()) {
      n = Math.addExact(n, c.getLayer().initializer().numParams(c));
    }
    return n;
  }

  private static long declaredParams(ComputationGraphConfiguration conf) {
    long n = 0;
    for (org.deeplearning4j.nn.conf.graph.GraphVertex v : conf.getVertices().values()) {
      n = Math.addExact(n, v.numParams(false));
    }
    return n;
  }

  private static void checkSize(long params) {
    if (params < 0 || params > MAX_PARAMS) {
      throw new IllegalArgumentException("the network declares " + params + " parameters, more than the "
          + MAX_PARAMS + " one array holds: check its layers' nIn and nOut");
    }
    long heap = Runtime.getRuntime().maxMemory();
    if (4 * params > heap / 2) {
      throw new IllegalArgumentException("the network declares " + params + " parameters (" + (4 * params >> 20)
          + " MiB of floats, twice that with their gradients), more than half of this JVM's heap (" + (heap >> 20)
          + " MiB): check its layers' nIn and nOut, or give the JVM more memory");
    }
  }

  public static Net of(MultiLayerNetwork net) {
    return new Layers(net);
  }

  public static Net of(ComputationGraph graph) {
    return new GraphNet(graph);
  }

  /** The DL4J network. */
  public abstract Model model();

  /** The parameters in the order of the flat parameter vector. */
  abstract List<Parameter> parameters();

  /** The output layer's configuration. */
  public abstract BaseOutputLayer outputLayer();

  /** The first layer that reads the input, and the preprocessor in front of it (or null). */
  abstract FeedForwardLayer inputLayer();

  abstract InputPreProcessor inputPreProcessor();

  abstract BackpropType backpropType();

  /** Whether DL4J divides gradients by the minibatch size (the default). */
  public abstract boolean miniBatch();

  /** Sets a minibatch as the input and labels of the next gradient computation. */
  public abstract void setBatch(DataSet batch);

  /** The flat gradient vector DL4J computed last (allocated on the first backprop). */
  public abstract INDArray flatGradients();

  /** The network's output (inference mode) for {@code x}. */
  public abstract INDArray output(INDArray x);

  /** The loss on {@code data}, as DL4J scores it (regularization included). */
  public abstract double score(DataSet data);

  /** The same network with the identity as the output activation (to read raw outputs); shares nothing. */
  public abstract Net withIdentityOutput();

  public INDArray params() {
    return model().params();
  }

  public void setParams(float[] values) {
    if (values.length != params().length()) {
      throw new IllegalArgumentException(values.length + " parameters for a network that has " + params().length());
    }
    model().setParams(Nd4j.createFromArray(values).reshape(params().shape()));
  }

  /** The number of values of one example's features. */
  public long inputWidth() {
    InputPreProcessor pre = inputPreProcessor();
    if (pre instanceof FeedForwardToCnnPreProcessor cnn) {
      return cnn.getInputHeight() * cnn.getInputWidth() * cnn.getNumChannels();
    }
    if (pre instanceof ReshapePreprocessor reshape && reshape.getInputShape() != null) { // an imported Keras model's
      long[] shape = reshape.getInputShape();
      long n = 1;
      for (int i = reshape.isHasMiniBatchDimension() ? 1 : 0; i < shape.length; i++) {
        n *= shape[i];
      }
      return n;
    }
    if (pre == null && inputLayer() instanceof EmbeddingSequenceLayer e) { // indexes, one per position
      return e.getInputLength();
    }
    if (pre == null && inputLayer() instanceof EmbeddingLayer) { // one index
      return 1;
    }
    if (pre == null && inputLayer() != null && inputLayer().getNIn() > 0) {
      return inputLayer().getNIn();
    }
    throw new IllegalArgumentException("cannot tell how many feature values the network takes: its first layer is "
        + (inputLayer() == null ? "not a feed-forward layer" : inputLayer().getClass().getSimpleName()
            + (pre == null ? "" : " behind a " + pre.getClass().getSimpleName()))
        + "; give the first layer nIn, or build the configuration with setInputType(InputType.feedForward(n)) or "
        + "InputType.convolutionalFlat(height, width, channels)");
  }

  /** Units of the output layer. */
  public long outputs() {
    return outputLayer().getNOut();
  }

  /** Whether the output layer's loss makes this a classifier (else a regressor). */
  public boolean classification() {
    ILossFunction loss = outputLayer().getLossFn();
    return loss instanceof LossMCXENT || loss instanceof LossBinaryXENT || loss instanceof LossHinge
        || loss instanceof LossSquaredHinge || loss instanceof LossFMeasure;
  }

  public abstract void computeGradientAndScore();

  /**
   * As {@link #computeGradientAndScore}, and returns the loss's gradient by each value of the
   * input ({@code [minibatch, inputWidth]}, of the summed loss, like the parameters' gradients):
   * what turns into an embedding model's row gradients.
   */
  public abstract INDArray computeGradientAndInputGradient();

  /**
   * Lets the dense and output layers reuse the forward pass in the backward pass ({@link ForwardReuse}), for a
   * network that only computes gradients from now on; returns how many layers do. With
   * {@code inputGradient} the first layer still computes the gradient by the network's input.
   */
  public abstract int reuseForwardPass(boolean inputGradient);

  /** Each layer's variables, the layers with parameters in the order of the forward pass, with their positions in it. */
  public abstract List<LayerPasses.Unit> layerUnits();

  /**
   * Makes the layers tell {@code transfers} where the forward and backward passes are
   * ({@link HookedLayer}); false, with nothing changed, when some layer cannot be hooked.
   */
  public abstract boolean hookLayers(LayerPasses transfers);

  /**
   * Turns the gradient of the last {@link #computeGradientAndScore} into DL4J's update, in place,
   * as {@code fit} does before it subtracts it from the parameters: divided by the minibatch,
   * regularized, through each parameter's updater (whose state this network keeps).
   */
  public abstract void applyUpdater(int iteration, int epoch, int batchSize);

  public double score() {
    return model().score();
  }

  public void checkTrainable() {
    if (backpropType() != BackpropType.Standard) {
      throw new IllegalArgumentException("truncated BPTT is not supported by SparkPS yet: use BackpropType.Standard");
    }
  }

  static void checkUpdaterConfig(Layer layer, String name) {
    org.deeplearning4j.nn.conf.layers.Layer conf = layer.conf().getLayer();
    if (!(conf instanceof BaseLayer) && !(conf instanceof org.deeplearning4j.nn.conf.layers.BatchNormalization)) {
      throw new IllegalArgumentException("parameter '" + name + "' belongs to a " + conf.getClass().getSimpleName()
          + " layer, which has no updater configuration SparkPS understands");
    }
  }

  static long offsetIn(INDArray flat, INDArray view) {
    return view.offset() - flat.offset();
  }

  /** A MultiLayerNetwork; parameters are named {@code <layer index>_<key>}. */
  static final class Layers extends Net {
    private final MultiLayerNetwork net;

    Layers(MultiLayerNetwork net) {
      this.net = net;
    }

    @Override
    public Model model() {
      return net;
    }

    @Override
    public List<Parameter> parameters() {
      List<Parameter> out = new ArrayList<>();
      for (int i = 0; i < net.getnLayers(); i++) {
        Layer layer = net.getLayer(i);
        for (Map.Entry<String, INDArray> p : layer.paramTable().entrySet()) {
          out.add(new Parameter(i + "_" + p.getKey(), p.getKey(), layer, p.getValue()));
        }
      }
      return out;
    }

    @Override
    public BaseOutputLayer outputLayer() {
      MultiLayerConfiguration conf = net.getLayerWiseConfigurations();
      org.deeplearning4j.nn.conf.layers.Layer last = conf.getConf(conf.getConfs().size() - 1).getLayer();
      if (!(last instanceof BaseOutputLayer out)) {
        throw new IllegalArgumentException("the network's last layer is a " + last.getClass().getSimpleName()
            + ": SparkPS trains networks that end in an OutputLayer");
      }
      return out;
    }

    @Override
    FeedForwardLayer inputLayer() {
      return net.getLayerWiseConfigurations().getConf(0).getLayer() instanceof FeedForwardLayer f ? f : null;
    }

    @Override
    InputPreProcessor inputPreProcessor() {
      return net.getLayerWiseConfigurations().getInputPreProcess(0);
    }

    @Override
    BackpropType backpropType() {
      return net.getLayerWiseConfigurations().getBackpropType();
    }

    @Override
    public boolean miniBatch() {
      return net.getLayerWiseConfigurations().getConf(0).isMiniBatch();
    }

    @Override
    public void setBatch(DataSet batch) {
      net.setInput(batch.getFeatures());
      net.setLabels(batch.getLabels());
      net.setLayerMaskArrays(batch.getFeaturesMaskArray(), batch.getLabelsMaskArray());
    }

    @Override
    public void computeGradientAndScore() {
      net.computeGradientAndScore();
    }

    @Override
    public INDArray computeGradientAndInputGradient() {
      // Without workspaces the output layer's input outlives the call, for the score below.
      net.getLayerWiseConfigurations().setTrainingWorkspaceMode(org.deeplearning4j.nn.conf.WorkspaceMode.NONE);
      INDArray inputGradient = net.calculateGradients(net.getInput(), net.getLabels(), null, null).getSecond();
      org.deeplearning4j.nn.api.layers.IOutputLayer out = (org.deeplearning4j.nn.api.layers.IOutputLayer) net
          .getOutputLayer();
      net.setScore(out.computeScore(net.calcRegularizationScore(true), true,
          org.deeplearning4j.nn.workspace.LayerWorkspaceMgr.noWorkspaces()));
      return inputGradient;
    }

    @Override
    public int reuseForwardPass(boolean inputGradient) {
      return ForwardReuse.install(net, inputGradient);
    }

    @Override
    public List<LayerPasses.Unit> layerUnits() {
      List<LayerPasses.Unit> units = new ArrayList<>();
      for (int i = 0; i < net.getnLayers(); i++) {
        int layer = i;
        List<String> names = net.getLayer(i).paramTable().keySet().stream().map(k -> layer + "_" + k).toList();
        if (!names.isEmpty()) {
          units.add(new LayerPasses.Unit(i, names));
        }
      }
      return units;
    }

    @Override
    public boolean hookLayers(LayerPasses transfers) {
      return HookedLayer.hookAllButOutput(net.getLayers(), transfers);
    }

    @Override
    public void applyUpdater(int iteration, int epoch, int batchSize) {
      ((org.deeplearning4j.nn.updater.BaseMultiLayerUpdater<?>) net.getUpdater(true)).update(net.gradient(), iteration,
          epoch, batchSize, org.deeplearning4j.nn.workspace.LayerWorkspaceMgr.noWorkspaces());
    }

    @Override
    public INDArray flatGradients() {
      return net.getFlattenedGradients();
    }

    @Override
    public INDArray output(INDArray x) {
      return net.output(x);
    }

    @Override
    public double score(DataSet data) {
      return net.score((org.nd4j.linalg.dataset.DataSet) data);
    }

    @Override
    public Net withIdentityOutput() {
      MultiLayerConfiguration conf = net.getLayerWiseConfigurations().clone();
      ((BaseLayer) conf.getConf(conf.getConfs().size() - 1).getLayer()).setActivationFn(new ActivationIdentity());
      MultiLayerNetwork raw = new MultiLayerNetwork(conf);
      raw.init(net.params().dup(), false);
      GemmConvolution.install(raw.getLayers());
      return new Layers(raw);
    }
  }
}
