package io.sparkps.ml.network;

import io.sparkps.spark.SparkPsConf;
import java.util.Arrays;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.gradient.DefaultGradient;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.layers.feedforward.dense.DenseLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.params.DefaultParamInitializer;
import org.deeplearning4j.nn.workspace.ArrayType;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A faster backward pass for the dense layers of a worker's network, with the same gradients.
 * DL4J 1.0.0-M2.1's dense layer computes its pre-activations twice per training step (in the
 * forward pass, and again in {@code backpropGradient}), and the first layer also computes the
 * gradient with respect to the network's input, which nothing uses. Here each dense layer keeps
 * a copy of its pre-activations from the forward pass and backpropagates from it, and the first
 * layer skips the input's gradient: on the 784-1024-1024-10 MLP about a third of a gradient's
 * time, with bit-for-bit the same gradients (the same operations on the same values, fewer of them).
 * A first layer that is a {@link GemmConvolution} skips its input's gradient too.
 * The output layer computes its pre-activations twice too (in its backward pass, and again for the
 * loss); here the loss reuses the backward pass's.
 *
 * <p>Only layers whose backward pass is exactly that are replaced: DL4J's {@code DenseLayer}
 * without dropout, weight noise or layer normalization, in a network trained by standard
 * backpropagation. A layer falls back to DL4J's own backward pass whenever its input is not the
 * one of the last training forward pass, or masks are set. Spark conf {@value #CONF} (default
 * true) turns it off.
 */
public final class ForwardReuse {
  private ForwardReuse() {}

  /** Whether {@link SparkPsConf#TRAIN_REUSE_FORWARD_PASS} is on (true unless set to false). */
  public static boolean enabled(SparkSession spark) {
    return SparkPsConf.TRAIN_REUSE_FORWARD_PASS.get(spark.conf());
  }

  /**
   * Replaces the network's eligible dense layers (initialized, before its first training step)
   * with ones that reuse the forward pass; returns how many were replaced. The network must not
   * be asked for the gradient with respect to its input afterwards (its first layer, dense or a
   * {@link GemmConvolution}, skips it).
   */
  static int install(MultiLayerNetwork net) {
    return install(net, false);
  }

  /**
   * As {@link #install(MultiLayerNetwork)}; with {@code inputGradient} the first layer computes its
   * input's gradient too.
   */
  static int install(MultiLayerNetwork net, boolean inputGradient) {
    if (net.getLayerWiseConfigurations().getBackpropType() != BackpropType.Standard) {
      return 0;
    }
    Layer[] layers = net.getLayers();
    if (!inputGradient && layers.length > 0 && layers[0] instanceof GemmConvolution first) {
      first.skipInputGradient(); // its zeros satisfy an input preprocessor's backward pass as well
    }
    int replaced = 0;
    for (int i = 0; i < layers.length; i++) {
      if (eligibleOutput(layers[i])) {
        layers[i] = new Output((org.deeplearning4j.nn.layers.OutputLayer) layers[i]);
        replaced++;
      } else if (eligible(layers[i])) {
        // The first layer's input gradient is needed only to backpropagate through an input preprocessor.
        boolean epsilon = inputGradient || i > 0 || net.getLayerWiseConfigurations().getInputPreProcess(0) != null;
        layers[i] = new Dense((DenseLayer) layers[i], epsilon);
        replaced++;
      }
    }
    return replaced;
  }

  /**
   * As {@link #install(MultiLayerNetwork)} for a ComputationGraph's layers (each in its vertex and
   * in the graph's list of layers). Every dense layer computes its input's gradient here.
   */
  static int install(ComputationGraph graph) {
    if (graph.getConfiguration().getBackpropType() != BackpropType.Standard) {
      return 0;
    }
    return GraphNet.replaceLayers(graph, l -> eligibleOutput(l)
        ? new Output((org.deeplearning4j.nn.layers.OutputLayer) l)
        : eligible(l) ? new Dense((DenseLayer) l, true) : null);
  }

  private static boolean eligible(Layer layer) {
    if (layer.getClass() != DenseLayer.class) {
      return false;
    }
    DenseLayer dense = (DenseLayer) layer;
    org.deeplearning4j.nn.conf.layers.DenseLayer conf = (org.deeplearning4j.nn.conf.layers.DenseLayer) dense.conf()
        .getLayer();
    return conf.getIDropout() == null && conf.getWeightNoise() == null && !dense.hasLayerNorm();
  }

  /** Gives {@code copy} the place, parameter and gradient views and listeners of the layer it replaces. */
  static void takeOver(Layer copy, Layer original) {
    copy.setIndex(original.getIndex());
    copy.setParamTable(original.paramTable());
    copy.setParamsViewArray(original.params());
    if (original.getGradientsViewArray() != null) {
      copy.setBackpropGradientsViewArray(original.getGradientsViewArray());
    }
    copy.setListeners(original.getListeners());
  }

  private static boolean eligibleOutput(Layer layer) {
    if (layer.getClass() != org.deeplearning4j.nn.layers.OutputLayer.class) {
      return false;
    }
    org.deeplearning4j.nn.conf.layers.BaseLayer conf = (org.deeplearning4j.nn.conf.layers.BaseLayer) layer.conf()
        .getLayer();
    return conf.getIDropout() == null && conf.getWeightNoise() == null;
  }

  /**
   * DL4J's output layer, whose loss (computed right after the backward pass by DL4J's
   * {@code computeGradientAndScore}) reuses the pre-activations of that backward pass instead of
   * computing them again. Only the loss of a training step reuses them, once, and only for the
   * very input the backward pass saw; any other call computes its own.
   */
  static final class Output extends org.deeplearning4j.nn.layers.OutputLayer {
    private static final long serialVersionUID = 1L;
    private transient INDArray kept;
    private transient INDArray keptFor;
    private transient boolean inBackward;
    private transient boolean inScore;
    /** How many times this layer computed its pre-activations (for tests). */
    transient long computed;

    Output(org.deeplearning4j.nn.layers.OutputLayer original) {
      super(original.conf(), original.params().dataType());
      takeOver(this, original);
    }

    @Override
    public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr workspaceMgr) {
      keptFor = null;
      inBackward = true;
      try {
        return super.backpropGradient(epsilon, workspaceMgr);
      } finally {
        inBackward = false;
      }
    }

    @Override
    public double computeScore(double fullNetRegTerm, boolean training, LayerWorkspaceMgr workspaceMgr) {
      inScore = training;
      try {
        return super.computeScore(fullNetRegTerm, training, workspaceMgr);
      } finally {
        inScore = false;
        keptFor = null; // used once
      }
    }

    @Override
    protected INDArray preOutput2d(boolean training, LayerWorkspaceMgr workspaceMgr) {
      if (inScore && keptFor != null && keptFor == input && maskArray == null) {
        return workspaceMgr.dup(ArrayType.ACTIVATIONS, kept); // (a loss function may work in place on it)
      }
      computed++;
      INDArray z = super.preOutput2d(training, workspaceMgr);
      if (inBackward && training && maskArray == null) {
        if (kept == null || kept.dataType() != z.dataType() || !Arrays.equals(kept.shape(), z.shape())) {
          try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
            kept = Nd4j.createUninitialized(z.dataType(), z.shape(), z.ordering());
          }
        }
        kept.assign(z);
        keptFor = input;
      }
      return z;
    }
  }

  /** DL4J's dense layer, backpropagating from the pre-activations its training forward pass kept. */
  static final class Dense extends DenseLayer {
    private static final long serialVersionUID = 1L;
    private final boolean inputGradient;
    /** The pre-activations of the last training forward pass (outside any workspace), and for which input. */
    private transient INDArray kept;
    private transient INDArray keptFor;

    Dense(DenseLayer original, boolean inputGradient) {
      super(original.conf(), original.params().dataType());
      this.inputGradient = inputGradient;
      takeOver(this, original);
    }

    /** Whether it computes the gradient with respect to its input (all but a first layer without a preprocessor). */
    boolean computesInputGradient() {
      return inputGradient;
    }

    @Override
    public INDArray activate(boolean training, LayerWorkspaceMgr workspaceMgr) {
      if (!training || maskArray != null) {
        keptFor = null;
        return super.activate(training, workspaceMgr);
      }
      INDArray z = preOutput(true, workspaceMgr);
      if (kept == null || kept.dataType() != z.dataType() || !Arrays.equals(kept.shape(), z.shape())) {
        try (MemoryWorkspace none = Nd4j.getMemoryManager().scopeOutOfWorkspaces()) {
          kept = Nd4j.createUninitialized(z.dataType(), z.shape(), z.ordering());
        }
      }
      kept.assign(z); // the activation function works in place on z
      keptFor = input;
      return layerConf().getActivationFn().getActivation(z, true);
    }

    @Override
    public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr workspaceMgr) {
      if (keptFor == null || keptFor != input || maskArray != null) {
        return super.backpropGradient(epsilon, workspaceMgr);
      }
      assertInputSet(true);
      keptFor = null; // used once: the activation's backward pass overwrites it
      INDArray delta = layerConf().getActivationFn().backprop(kept, epsilon).getFirst();
      Gradient gradient = new DefaultGradient();
      if (hasBias()) {
        INDArray biasGradient = gradientViews.get(DefaultParamInitializer.BIAS_KEY);
        delta.sum(biasGradient, 0);
        gradient.gradientForVariable().put(DefaultParamInitializer.BIAS_KEY, biasGradient);
      }
      INDArray epsilonNext = null;
      if (inputGradient) {
        INDArray w = getParam(DefaultParamInitializer.WEIGHT_KEY);
        epsilonNext = workspaceMgr.createUninitialized(ArrayType.ACTIVATION_GRAD, delta.dataType(),
            new long[] {w.size(0), delta.size(0)}, 'f');
        epsilonNext = w.mmuli(delta.transpose(), epsilonNext).transpose();
      }
      INDArray weightGradient = gradientViews.get(DefaultParamInitializer.WEIGHT_KEY);
      Nd4j.gemm(input.castTo(weightGradient.dataType()), delta, weightGradient, true, false, 1.0, 0.0);
      gradient.gradientForVariable().put(DefaultParamInitializer.WEIGHT_KEY, weightGradient);
      return new Pair<>(gradient, epsilonNext);
    }
  }
}
