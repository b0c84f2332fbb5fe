package io.sparkps.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.SubsamplingLayer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The {@code --network} argument: a preset sized to the data ({@code mlp}, {@code mlp:512,256},
 * {@code lenet}) or a file holding a DL4J configuration's JSON.
 */
final class Networks {
  private Networks() {}

  /** The network's JSON for {@code spec}, with {@code inputs} features and {@code classes} classes. */
  static String resolve(String spec, long inputs, int classes, long seed, double learningRate) {
    if (spec.equals("mlp") || spec.startsWith("mlp:")) {
      return mlp(hidden(spec), inputs, classes, seed, learningRate);
    }
    if (spec.equals("lenet")) {
      return lenet(inputs, classes, seed, learningRate);
    }
    Path file = Path.of(spec);
    if (!Files.isRegularFile(file)) {
      throw new UsageException("--network " + spec + ": neither a preset (mlp, mlp:H1,H2,..., lenet) nor a file");
    }
    String json;
    try {
      json = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UsageException("--network " + spec + ": cannot read it (" + e.getMessage() + ")", e);
    }
    try {
      io.sparkps.ml.Experiment.builder().setNetworkJson(json); // builds the network: fails on what DL4J cannot read
    } catch (RuntimeException e) {
      throw new UsageException("--network " + spec + ": not a DL4J MultiLayerConfiguration or "
          + "ComputationGraphConfiguration JSON (" + SparkPsCli.firstLine(e.getMessage()) + ")", e);
    }
    return json;
  }

  static int[] hidden(String spec) {
    if (!spec.contains(":")) {
      return new int[] {256};
    }
    try {
      String[] parts = spec.substring(4).split(",");
      int[] sizes = new int[parts.length];
      for (int i = 0; i < parts.length; i++) {
        sizes[i] = Integer.parseInt(parts[i].trim());
        if (sizes[i] < 1) {
          throw new NumberFormatException(parts[i]);
        }
      }
      return sizes;
    } catch (NumberFormatException e) {
      throw new UsageException("--network " + spec + ": the hidden layer sizes must be positive whole numbers, "
          + "e.g. mlp:512,256");
    }
  }

  static String mlp(int[] hidden, long inputs, int classes, long seed, double learningRate) {
    NeuralNetConfiguration.ListBuilder b = new NeuralNetConfiguration.Builder().seed(seed).dataType(DataType.FLOAT)
        .updater(new Adam(learningRate)).list();
    long in = inputs;
    for (int h : hidden) {
      b.layer(new DenseLayer.Builder().nIn(in).nOut(h).activation(Activation.RELU).build());
      in = h;
    }
    return b.layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(in).nOut(classes)
        .activation(Activation.SOFTMAX).build()).build().toJson();
  }

  static String lenet(long inputs, int classes, long seed, double learningRate) {
    int side = (int) Math.round(Math.sqrt(inputs));
    if ((long) side * side != inputs || side < 12) {
      throw new UsageException("--network lenet needs square single-channel images of at least 12x12 pixels, "
          + "but the features have " + inputs + " values");
    }
    return new NeuralNetConfiguration.Builder().seed(seed).dataType(DataType.FLOAT).updater(new Adam(learningRate))
        .list()
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(20).activation(Activation.RELU).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(50).activation(Activation.RELU).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new DenseLayer.Builder().nOut(500).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(classes)
            .activation(Activation.SOFTMAX).build())
        .setInputType(InputType.convolutionalFlat(side, side, 1)).build().toJson();
  }
}
