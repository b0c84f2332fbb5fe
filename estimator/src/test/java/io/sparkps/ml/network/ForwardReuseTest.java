package io.sparkps.ml.network;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.dropout.Dropout;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.preprocessor.CnnToFeedForwardPreProcessor;
import org.deeplearning4j.nn.conf.weightnoise.DropConnect;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.junit.jupiter.api.Test;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/** The dense layers that reuse their forward pass give DL4J's gradients bit for bit, and only where they can. */
class ForwardReuseTest {
  private static NeuralNetConfiguration.ListBuilder base() {
    return new NeuralNetConfiguration.Builder().seed(5).dataType(DataType.FLOAT).updater(new Adam(1e-2)).list();
  }

  /** Dense layers of three activations, one without bias, between 20 inputs and a 4-class softmax. */
  private static MultiLayerConfiguration mlp() {
    return base()
        .layer(new DenseLayer.Builder().nIn(20).nOut(32).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(32).nOut(16).activation(Activation.TANH).hasBias(false).build())
        .layer(new DenseLayer.Builder().nIn(16).nOut(12).activation(Activation.SIGMOID).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(12).nOut(4)
            .activation(Activation.SOFTMAX).build())
        .build();
  }

  private static INDArray features(long seed, int rows) {
    return Nd4j.rand(DataType.FLOAT, rows, 20).subi(0.5).muli(4).addi(seed % 3);
  }

  private static INDArray labels(int rows) {
    INDArray y = Nd4j.zeros(DataType.FLOAT, rows, 4);
    for (int i = 0; i < rows; i++) {
      y.putScalar(i, (i * 7) % 4, 1f);
    }
    return y;
  }

  private static MultiLayerNetwork twin(MultiLayerNetwork of) {
    MultiLayerNetwork net = new MultiLayerNetwork(of.getLayerWiseConfigurations().clone());
    net.init(of.params().dup(), true);
    return net;
  }

  /** DL4J's {@link #mlp()}, freshly initialized. */
  private static MultiLayerNetwork stockMlp() {
    MultiLayerNetwork net = new MultiLayerNetwork(mlp());
    net.init();
    return net;
  }

  /** A twin of {@code stock} whose dense layers reuse their forward pass. */
  private static MultiLayerNetwork reusingTwin(MultiLayerNetwork stock) {
    MultiLayerNetwork reusing = twin(stock);
    ForwardReuse.install(reusing);
    return reusing;
  }

  @Test
  void gradientsAndTrainingSteps_areDl4jsBitForBit() {
    MultiLayerNetwork stock = stockMlp();
    MultiLayerNetwork reusing = twin(stock);
    assertEquals(4, ForwardReuse.install(reusing), "the three dense layers and the output layer reuse their forward pass");
    ForwardReuse.Output output = (ForwardReuse.Output) reusing.getOutputLayer();
    for (int step = 0; step < 4; step++) {
      INDArray x = features(step, 16 + step); // minibatch sizes change: the kept pre-activations follow
      INDArray y = labels(16 + step);
      long computedBefore = output.computed;
      for (MultiLayerNetwork net : new MultiLayerNetwork[] {stock, reusing}) {
        net.setInput(x);
        net.setLabels(y);
        net.computeGradientAndScore();
      }
      assertEquals(computedBefore + 1, output.computed, "step " + step
          + ": the output layer's pre-activations computed once, for the backward pass and the loss");
      assertEquals(0.0, stock.getFlattenedGradients().sub(reusing.getFlattenedGradients()).amaxNumber().doubleValue(),
          "step " + step + ": the same gradient");
      assertTrue(stock.getFlattenedGradients().amaxNumber().doubleValue() > 1e-4, "a gradient that is not zero");
      assertEquals(stock.score(), reusing.score(), "step " + step + ": the same loss");
      stock.fit(x, y);
      reusing.fit(x, y);
      assertEquals(0.0, stock.params().sub(reusing.params()).amaxNumber().doubleValue(), "step " + step
          + ": DL4J's fit (its updater on these gradients) ends at the same parameters");
      org.nd4j.linalg.dataset.DataSet other = new org.nd4j.linalg.dataset.DataSet(features(step + 7, 9), labels(9));
      long before = output.computed;
      assertEquals(stock.score(other), reusing.score(other), "step " + step + ": the loss on other examples");
      assertEquals(before + 1, output.computed, "a loss on other examples computes its own pre-activations");
    }
  }

  /** A graph of dense layers (one reading two others) and its twin reusing the forward pass: the same gradients, bit for bit. */
  @Test
  void aComputationGraphsGradientsAndTrainingSteps_areDl4jsBitForBit() {
    org.deeplearning4j.nn.conf.ComputationGraphConfiguration conf = new NeuralNetConfiguration.Builder().seed(3)
        .dataType(DataType.FLOAT).updater(new Adam(1e-2)).graphBuilder().addInputs("in")
        .addLayer("a", new DenseLayer.Builder().nIn(20).nOut(16).activation(Activation.RELU).build(), "in")
        .addLayer("b", new DenseLayer.Builder().nIn(20).nOut(8).activation(Activation.TANH).build(), "in")
        .addLayer("c", new DenseLayer.Builder().nIn(24).nOut(12).activation(Activation.SIGMOID).build(), "a", "b")
        .addLayer("out", new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(12).nOut(4)
            .activation(Activation.SOFTMAX).build(), "c")
        .setOutputs("out").build();
    org.deeplearning4j.nn.graph.ComputationGraph stock = new org.deeplearning4j.nn.graph.ComputationGraph(conf);
    stock.init();
    org.deeplearning4j.nn.graph.ComputationGraph reusing = new org.deeplearning4j.nn.graph.ComputationGraph(conf.clone());
    reusing.init(stock.params().dup(), true);
    assertEquals(4, ForwardReuse.install(reusing), "three dense layers and the output layer");
    assertTrue(reusing.getLayer("c") instanceof ForwardReuse.Dense, "the graph's vertex holds the new layer");
    assertTrue(Arrays.asList(reusing.getLayers()).contains(reusing.getLayer("c")), "and so does its list of layers");
    ForwardReuse.Output output = (ForwardReuse.Output) reusing.getLayer("out");
    for (int step = 0; step < 3; step++) {
      INDArray x = features(step, 12 + step);
      INDArray y = labels(12 + step);
      long before = output.computed;
      for (org.deeplearning4j.nn.graph.ComputationGraph g : List.of(stock, reusing)) {
        g.setInputs(x);
        g.setLabels(y);
        g.computeGradientAndScore();
      }
      assertEquals(before + 1, output.computed, "step " + step + ": the output's pre-activations computed once");
      assertEquals(0.0, stock.getFlattenedGradients().sub(reusing.getFlattenedGradients()).amaxNumber().doubleValue(),
          "step " + step + ": the same gradient");
      assertTrue(stock.getFlattenedGradients().amaxNumber().doubleValue() > 1e-4, "a gradient that is not zero");
      assertEquals(stock.score(), reusing.score(), "step " + step + ": the same loss");
      stock.fit(new INDArray[] {x}, new INDArray[] {y});
      reusing.fit(new INDArray[] {x}, new INDArray[] {y});
      assertEquals(0.0, stock.params().sub(reusing.params()).amaxNumber().doubleValue(), "step " + step
          + ": the same parameters after DL4J's fit");
    }
  }

  @Test
  void onlyLayersWhoseBackwardPassItReproducesAreReplaced() {
    MultiLayerConfiguration conf = base()
        .layer(new DenseLayer.Builder().nIn(20).nOut(8).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(8).nOut(8).activation(Activation.RELU).dropOut(new Dropout(0.9)).build())
        .layer(new DenseLayer.Builder().nIn(8).nOut(8).activation(Activation.RELU).weightNoise(new DropConnect(0.9))
            .build())
        .layer(new DenseLayer.Builder().nIn(8).nOut(8).activation(Activation.RELU).hasLayerNorm(true).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(8).nOut(4).activation(Activation.SOFTMAX)
            .build())
        .build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    assertEquals(2, ForwardReuse.install(net));
    assertEquals(Arrays.asList(true, false, false, false, false),
        Arrays.stream(net.getLayers()).map(l -> l instanceof ForwardReuse.Dense).toList(),
        "dropout, weight noise and layer normalization keep DL4J's layer");
    assertTrue(net.getOutputLayer() instanceof ForwardReuse.Output);
    MultiLayerConfiguration droppedOutput = base()
        .layer(new DenseLayer.Builder().nIn(20).nOut(8).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(8).nOut(4).activation(Activation.SOFTMAX)
            .dropOut(new Dropout(0.9)).build())
        .build();
    MultiLayerNetwork withDropout = new MultiLayerNetwork(droppedOutput);
    withDropout.init();
    assertEquals(1, ForwardReuse.install(withDropout));
    assertFalse(withDropout.getOutputLayer() instanceof ForwardReuse.Output, "an output layer with dropout keeps DL4J's");
    MultiLayerConfiguration tbptt = mlp().clone();
    tbptt.setBackpropType(BackpropType.TruncatedBPTT);
    MultiLayerNetwork truncated = new MultiLayerNetwork(tbptt);
    truncated.init();
    assertEquals(0, ForwardReuse.install(truncated), "truncated backpropagation keeps DL4J's layers");
  }

  /** Layer {@code i}'s gradient and input gradient after its own training forward pass on {@code input}. */
  private static Pair<Gradient, INDArray> backpropOf(MultiLayerNetwork net, int i, INDArray input, INDArray epsilon) {
    Layer layer = forward(net, i, input);
    return layer.backpropGradient(epsilon.dup(), LayerWorkspaceMgr.noWorkspaces());
  }

  /** Layer {@code i} of {@code net} after its training forward pass on {@code input}. */
  private static Layer forward(MultiLayerNetwork net, int i, INDArray input) {
    net.initGradientsView();
    Layer layer = net.getLayer(i);
    layer.setInput(input.dup(), LayerWorkspaceMgr.noWorkspaces());
    layer.activate(true, LayerWorkspaceMgr.noWorkspaces());
    return layer;
  }

  /** What layer 1 gets from layer 0 for {@code x}. */
  private static INDArray intoLayer1(MultiLayerNetwork net, INDArray x) {
    return net.feedForwardToLayer(0, x, true).get(1).dup();
  }

  @Test
  void theFirstLayerSkipsTheInputGradient_theOthersAndAPreprocessedFirstLayerDoNot() {
    MultiLayerNetwork stock = stockMlp();
    MultiLayerNetwork reusing = reusingTwin(stock);
    INDArray x = features(1, 8);
    INDArray epsilon0 = Nd4j.rand(DataType.FLOAT, 8, 32);
    assertNull(backpropOf(reusing, 0, x, epsilon0).getSecond(), "nothing uses the network input's gradient");
    Pair<Gradient, INDArray> dl4j0 = backpropOf(stock, 0, x, epsilon0);
    assertNotNull(dl4j0.getSecond(), "(DL4J computes it)");
    assertEquals(dl4j0.getFirst().getGradientFor("W"), backpropOf(reusing, 0, x, epsilon0).getFirst().getGradientFor("W"));
    INDArray epsilon1 = Nd4j.rand(DataType.FLOAT, 8, 16);
    INDArray h = intoLayer1(stock, x);
    INDArray expected = backpropOf(stock, 1, h, epsilon1).getSecond();
    assertEquals(expected, backpropOf(reusing, 1, h, epsilon1).getSecond(), "layer 1 passes its input gradient on");

    MultiLayerConfiguration preprocessed = mlp().clone();
    preprocessed.getInputPreProcessors().put(0, new CnnToFeedForwardPreProcessor(4, 5, 1));
    MultiLayerNetwork withPreprocessor = new MultiLayerNetwork(preprocessed);
    withPreprocessor.init();
    ForwardReuse.install(withPreprocessor);
    assertTrue(((ForwardReuse.Dense) withPreprocessor.getLayer(0)).computesInputGradient(),
        "a preprocessor before the first layer backpropagates the layer's input gradient");
    assertFalse(((ForwardReuse.Dense) reusing.getLayer(0)).computesInputGradient());
  }

  @Test
  void aBackwardPassOnAnotherInputThanTheForwardPassSaw_isDl4jsOwn() {
    MultiLayerNetwork stock = stockMlp();
    MultiLayerNetwork reusing = reusingTwin(stock);
    INDArray seen = intoLayer1(stock, features(1, 8));
    INDArray other = intoLayer1(stock, features(2, 8));
    INDArray epsilon = Nd4j.rand(DataType.FLOAT, 8, 16);
    Layer layer = forward(reusing, 1, seen);
    layer.setInput(other.dup(), LayerWorkspaceMgr.noWorkspaces()); // and no forward pass on it
    Pair<Gradient, INDArray> got = layer.backpropGradient(epsilon.dup(), LayerWorkspaceMgr.noWorkspaces());
    Pair<Gradient, INDArray> expected = backpropOf(stock, 1, other, epsilon);
    assertEquals(expected.getSecond(), got.getSecond(), "the input gradient on the other input");
    assertEquals(expected.getFirst().getGradientFor("W"), got.getFirst().getGradientFor("W"));
    assertSame(layer, reusing.getLayer(1));
  }
}
