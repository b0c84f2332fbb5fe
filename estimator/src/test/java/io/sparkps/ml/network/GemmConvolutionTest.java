package io.sparkps.ml.network;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.CNN2DFormat;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.ConvolutionMode;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.dropout.Dropout;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.Convolution1DLayer;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.SubsamplingLayer;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.junit.jupiter.api.Test;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/** The convolutions computed as one matrix product per pass give DL4J's outputs and gradients, wherever they are used. */
class GemmConvolutionTest {
  private static NeuralNetConfiguration.ListBuilder base() {
    return new NeuralNetConfiguration.Builder().seed(11).dataType(DataType.FLOAT).updater(new Adam(1e-2)).list();
  }

  /** The LeNet preset's shape: 5x5 convolutions of 20 and 50 filters with max pools, a dense layer, softmax. */
  private static MultiLayerConfiguration lenet() {
    return base()
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(20).activation(Activation.IDENTITY).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(50).activation(Activation.IDENTITY).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new DenseLayer.Builder().nOut(100).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(10).activation(Activation.SOFTMAX)
            .build())
        .setInputType(InputType.convolutionalFlat(28, 28, 1)).build();
  }

  /**
   * What the LeNet preset does not exercise: three channels, strides, padding, a non-square
   * kernel, no bias, ReLU and tanh, Same mode with its uneven padding, and dropout on a
   * convolution's input.
   */
  private static MultiLayerConfiguration odd() {
    return base()
        .layer(new ConvolutionLayer.Builder(3, 2).stride(2, 1).padding(1, 2).nOut(6).activation(Activation.RELU)
            .build())
        .layer(new ConvolutionLayer.Builder(3, 3).stride(2, 2).convolutionMode(ConvolutionMode.Same).nOut(5)
            .hasBias(false).activation(Activation.TANH).build())
        .layer(new ConvolutionLayer.Builder(2, 2).nOut(4).dropOut(new Dropout(0.7)).activation(Activation.SIGMOID)
            .build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(3).activation(Activation.SOFTMAX)
            .build())
        .setInputType(InputType.convolutional(11, 9, 3)).build();
  }

  private static MultiLayerNetwork network(MultiLayerConfiguration conf, boolean gemm) {
    MultiLayerNetwork net = new MultiLayerNetwork(conf.clone());
    net.init();
    if (gemm) {
      GemmConvolution.install(net.getLayers());
    }
    return net;
  }

  private static INDArray labels(int rows, int classes) {
    INDArray y = Nd4j.zeros(DataType.FLOAT, rows, classes);
    for (int i = 0; i < rows; i++) {
      y.putScalar(i, (i * 7) % classes, 1f);
    }
    return y;
  }

  private static double relativeDifference(INDArray a, INDArray b) {
    return a.sub(b).norm2Number().doubleValue() / Math.max(1e-12, b.norm2Number().doubleValue());
  }

  /** Gradients (every parameter's and the input's) and outputs of both, on one minibatch. */
  private static void assertSameAsDl4j(MultiLayerConfiguration conf, INDArray x, INDArray y, int convolutions) {
    MultiLayerNetwork dl4j = network(conf, false);
    MultiLayerNetwork gemm = network(conf, true);
    long replaced = java.util.Arrays.stream(gemm.getLayers()).filter(l -> l instanceof GemmConvolution).count();
    assertEquals(convolutions, replaced, "convolution layers replaced");
    assertEquals(dl4j.params(), gemm.params());

    assertTrue(relativeDifference(gemm.output(x), dl4j.output(x)) < 1e-5, "outputs alike");
    Nd4j.getRandom().setSeed(3);
    Pair<Gradient, INDArray> expected = dl4j.calculateGradients(x, y, null, null);
    Nd4j.getRandom().setSeed(3);
    Pair<Gradient, INDArray> actual = gemm.calculateGradients(x, y, null, null);
    Map<String, INDArray> want = expected.getFirst().gradientForVariable();
    Map<String, INDArray> got = actual.getFirst().gradientForVariable();
    assertEquals(want.keySet(), got.keySet());
    for (String name : want.keySet()) {
      assertTrue(want.get(name).norm2Number().doubleValue() > 0, name + " has a gradient");
      double d = relativeDifference(got.get(name), want.get(name));
      assertTrue(d < 1e-5, name + ": relative difference " + d);
    }
    double d = relativeDifference(actual.getSecond(), expected.getSecond());
    assertTrue(d < 1e-5, "input gradient: relative difference " + d);
    assertEquals(dl4j.getFlattenedGradients().length(), gemm.getFlattenedGradients().length());
    assertTrue(relativeDifference(gemm.getFlattenedGradients(), dl4j.getFlattenedGradients()) < 1e-5,
        "the flat gradient views alike");
  }

  @Test
  void lenetGradientsAndOutputsAreDl4js() {
    Nd4j.getRandom().setSeed(1);
    assertSameAsDl4j(lenet(), Nd4j.rand(DataType.FLOAT, 16, 784), labels(16, 10), 2);
  }

  @Test
  void stridesPaddingSameModeNoBiasAndDropoutAreDl4js() {
    Nd4j.getRandom().setSeed(2);
    INDArray x = Nd4j.rand(DataType.FLOAT, 7, 3, 11, 9).subi(0.5);
    assertSameAsDl4j(odd(), x, labels(7, 3), 3);
  }

  @Test
  void trainingStepsStayWithDl4jAndComputeEachForwardPassOnce() {
    MultiLayerNetwork dl4j = network(lenet(), false);
    MultiLayerNetwork gemm = network(lenet(), true);
    Nd4j.getRandom().setSeed(4);
    for (int step = 0; step < 5; step++) {
      DataSet batch = new DataSet(Nd4j.rand(DataType.FLOAT, 32, 784), labels(32, 10));
      dl4j.fit(batch);
      gemm.fit(batch);
    }
    double d = relativeDifference(gemm.params(), dl4j.params());
    assertTrue(d < 1e-4, "parameters after 5 Adam steps: relative difference " + d);
    assertTrue(relativeDifference(gemm.params(), network(lenet(), false).params()) > 1e-3, "training moved them");
    for (Layer layer : gemm.getLayers()) {
      if (layer instanceof GemmConvolution conv) {
        assertEquals(5, conv.computed, "pre-activations computed once per step, the forward pass's kept for the backward");
      }
    }

  }

  @Test
  void aBackwardPassAfterAnotherInputsForwardPassUsesItsOwnInput() {
    MultiLayerNetwork dl4j = network(lenet(), false);
    MultiLayerNetwork gemm = network(lenet(), true);
    dl4j.initGradientsView();
    gemm.initGradientsView();
    Layer d = dl4j.getLayer(0);
    Layer g = gemm.getLayer(0);
    LayerWorkspaceMgr none = LayerWorkspaceMgr.noWorkspaces();
    Nd4j.getRandom().setSeed(6);
    INDArray a = Nd4j.rand(DataType.FLOAT, 8, 1, 28, 28);
    INDArray b = Nd4j.rand(DataType.FLOAT, 8, 1, 28, 28).muli(3);
    INDArray epsilon = Nd4j.rand(DataType.FLOAT, 8, 20, 24, 24).subi(0.5);
    g.setInput(a, none);
    g.activate(true, none);
    g.setInput(b, none);
    g.activate(false, none); // an evaluation's pass in between: the patch matrix is b's now
    g.setInput(a, none);
    Pair<Gradient, INDArray> got = g.backpropGradient(epsilon.dup(), none);
    d.setInput(a, none);
    d.activate(true, none);
    Pair<Gradient, INDArray> want = d.backpropGradient(epsilon.dup(), none);
    for (String name : want.getFirst().gradientForVariable().keySet()) {
      double diff = relativeDifference(got.getFirst().getGradientFor(name), want.getFirst().getGradientFor(name));
      assertTrue(diff < 1e-5, name + ": relative difference " + diff);
    }
    assertTrue(relativeDifference(got.getSecond(), want.getSecond()) < 1e-5, "input gradient");
  }

  @Test
  void graphsAndRebuiltNetworksGetThemToo() {
    ComputationGraphConfiguration conf = new NeuralNetConfiguration.Builder().seed(3).dataType(DataType.FLOAT)
        .updater(new Adam(1e-3)).graphBuilder().addInputs("in")
        .addLayer("conv", new ConvolutionLayer.Builder(3, 3).nOut(4).activation(Activation.RELU).build(), "in")
        .addLayer("out", new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(2)
            .activation(Activation.SOFTMAX).build(), "conv")
        .setOutputs("out").setInputTypes(InputType.convolutional(6, 6, 1)).build();
    ComputationGraph dl4j = new ComputationGraph(conf.clone());
    dl4j.init();
    Net net = Net.fromJson(conf.toJson());
    ComputationGraph gemm = (ComputationGraph) net.model();
    assertTrue(gemm.getLayer("conv") instanceof GemmConvolution, "the vertex's layer");
    assertTrue(java.util.Arrays.stream(gemm.getLayers()).anyMatch(l -> l instanceof GemmConvolution), "the graph's list");
    gemm.setParams(dl4j.params());
    INDArray x = Nd4j.rand(DataType.FLOAT, 5, 1, 6, 6);
    assertTrue(relativeDifference(gemm.outputSingle(x), dl4j.outputSingle(x)) < 1e-5);
    Net identity = net.withIdentityOutput();
    assertTrue(((ComputationGraph) identity.model()).getLayer("conv") instanceof GemmConvolution);

    Net layers = Net.fromJson(lenet().toJson());
    assertEquals(2, java.util.Arrays.stream(((MultiLayerNetwork) layers.model()).getLayers())
        .filter(l -> l instanceof GemmConvolution).count(), "a network built from JSON");
    assertEquals(2, java.util.Arrays.stream(((MultiLayerNetwork) layers.withIdentityOutput().model()).getLayers())
        .filter(l -> l instanceof GemmConvolution).count(), "its identity-output copy");
  }

  /**
   * A worker's network (the forward pass reused, no input gradient wanted): its first convolution
   * leaves the input's gradient out, through the input preprocessor, and every gradient stays DL4J's.
   */
  @Test
  void theFirstConvolutionLeavesOutTheInputsGradient_whenNothingReadsIt() {
    MultiLayerNetwork dl4j = network(lenet(), false);
    MultiLayerNetwork gemm = network(lenet(), true);
    ForwardReuse.install(gemm, false);
    Nd4j.getRandom().setSeed(15);
    INDArray x = Nd4j.rand(DataType.FLOAT, 12, 784);
    INDArray y = labels(12, 10);
    for (MultiLayerNetwork net : new MultiLayerNetwork[] {dl4j, gemm}) {
      net.setInput(x);
      net.setLabels(y);
      net.computeGradientAndScore();
    }
    Map<String, INDArray> want = dl4j.gradient().gradientForVariable();
    Map<String, INDArray> got = gemm.gradient().gradientForVariable();
    assertEquals(want.keySet(), got.keySet());
    for (String name : want.keySet()) {
      double d = relativeDifference(got.get(name), want.get(name));
      assertTrue(d < 1e-5, name + ": relative difference " + d);
    }
    assertEquals(dl4j.score(), gemm.score(), 1e-5);
    assertEquals(0, ((GemmConvolution) gemm.getLayer(0)).inputGradients, "the first convolution's input gradient");
    assertEquals(1, ((GemmConvolution) gemm.getLayer(2)).inputGradients, "the second's, which the first needs");

    MultiLayerNetwork embedding = network(lenet(), true);
    ForwardReuse.install(embedding, true); // a network whose input's gradient is read
    assertTrue(relativeDifference(embedding.calculateGradients(x, y, null, null).getSecond(),
        dl4j.calculateGradients(x, y, null, null).getSecond()) < 1e-5, "the input's gradient when it is wanted");
    assertEquals(1, ((GemmConvolution) embedding.getLayer(0)).inputGradients);
  }

  @Test
  void leavesWhatItDoesNotComputeToDl4j() {
    MultiLayerNetwork nhwc = network(base()
        .layer(new ConvolutionLayer.Builder(3, 3).nOut(4).dataFormat(CNN2DFormat.NHWC).build())
        .layer(new ConvolutionLayer.Builder(3, 3).nOut(4).dilation(2, 2).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(2).activation(Activation.SOFTMAX)
            .build())
        .setInputType(InputType.convolutional(12, 12, 1, CNN2DFormat.NHWC)).build(), true);
    assertFalse(nhwc.getLayer(0) instanceof GemmConvolution, "channels last");
    assertFalse(nhwc.getLayer(1) instanceof GemmConvolution, "dilated");
    MultiLayerNetwork oneD = network(base()
        .layer(new Convolution1DLayer.Builder(3).nOut(4).build())
        .layer(new org.deeplearning4j.nn.conf.layers.RnnOutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
            .nOut(2).activation(Activation.SOFTMAX).build())
        .setInputType(InputType.recurrent(3, 10)).build(), true);
    assertFalse(oneD.getLayer(0) instanceof GemmConvolution, "1-D");
  }

  @Test
  void anInputWhoseStridesAreInAnotherOrder_isReadInItsOwn() {
    MultiLayerNetwork dl4j = network(odd(), false);
    MultiLayerNetwork gemm = network(odd(), true);
    Nd4j.getRandom().setSeed(12);
    // channels last, permuted to channels first: C order by its flag, not a view, strides in another order
    INDArray x = Nd4j.rand(DataType.FLOAT, 5, 11, 9, 3).subi(0.5).permute(0, 3, 1, 2);
    assertTrue(relativeDifference(gemm.output(x), dl4j.output(x)) < 1e-5, "outputs alike");
  }

  @Test
  void aMinibatchOverTheLimitIsLaidOutAPartAtATime() {
    long limit = GemmConvolution.maxPatchFloats;
    try {
      // one example's patches: 25 x 24 x 24 = 14,400 floats in the first convolution, 500 x 8 x 8 = 32,000 in the
      // second; so 6 and 3 examples at a time, the last part of 16 examples 4 and 1
      GemmConvolution.maxPatchFloats = 100_000;
      Nd4j.getRandom().setSeed(9);
      assertSameAsDl4j(lenet(), Nd4j.rand(DataType.FLOAT, 16, 784), labels(16, 10), 2);
      Nd4j.getRandom().setSeed(10);
      assertSameAsDl4j(odd(), Nd4j.rand(DataType.FLOAT, 7, 3, 11, 9).subi(0.5), labels(7, 3), 3);
      MultiLayerNetwork dl4j = network(lenet(), false);
      MultiLayerNetwork gemm = network(lenet(), true);
      for (int step = 0; step < 3; step++) {
        DataSet batch = new DataSet(Nd4j.rand(DataType.FLOAT, 16, 784), labels(16, 10));
        dl4j.fit(batch);
        gemm.fit(batch);
      }
      assertTrue(relativeDifference(gemm.params(), dl4j.params()) < 1e-4, "3 steps in parts, as DL4J's");
      assertEquals(3, ((GemmConvolution) gemm.getLayer(2)).computed, "the kept pre-activations used in parts too");
    } finally {
      GemmConvolution.maxPatchFloats = limit;
    }
  }

  @Test
  void anExampleOverTheLimitGoesThroughDl4jsOwnLayer() {
    long limit = GemmConvolution.maxPatchFloats;
    try {
      GemmConvolution.maxPatchFloats = 20_000; // over one example's patches of the first convolution, under the second's
      MultiLayerNetwork dl4j = network(lenet(), false);
      MultiLayerNetwork gemm = network(lenet(), true);
      Nd4j.getRandom().setSeed(8);
      DataSet batch = new DataSet(Nd4j.rand(DataType.FLOAT, 8, 784), labels(8, 10));
      dl4j.fit(batch);
      gemm.fit(batch);
      assertEquals(1, ((GemmConvolution) gemm.getLayer(0)).computed, "under the limit: its own pass");
      assertEquals(0, ((GemmConvolution) gemm.getLayer(2)).computed, "over it: DL4J's");
      double d = relativeDifference(gemm.params(), dl4j.params());
      assertTrue(d < 1e-5, "the same step either way: relative difference " + d);
    } finally {
      GemmConvolution.maxPatchFloats = limit;
    }
  }

  @Test
  void theSystemPropertyChoosesDl4jsOwnAndRefusesOtherValues() {
    try {
      System.setProperty(GemmConvolution.PROPERTY, "dl4j");
      assertEquals(0, GemmConvolution.install(network(lenet(), false).getLayers()));
      System.setProperty(GemmConvolution.PROPERTY, "fast");
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> GemmConvolution.install(network(lenet(), false).getLayers()));
      assertTrue(e.getMessage().contains("sparkps.convolutions is 'fast'") && e.getMessage().contains("gemm")
          && e.getMessage().contains("dl4j"), e.getMessage());
    } finally {
      System.clearProperty(GemmConvolution.PROPERTY);
    }
    assertEquals(2, GemmConvolution.install(network(lenet(), false).getLayers()));
  }
}
