package io.sparkps.ml;

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
 * Networks named in a word and sized to the data, as the command line's {@code --network} and
 * Python's {@code sparkps.ml.network} take them: {@code mlp} (one hidden layer of 256),
 * {@code mlp:512,256} (ReLU layers of those sizes) and {@code lenet} (two convolutions and pools,
 * a dense layer of 500; square single-channel images). Adam, softmax over the classes, float.
 */
public final class NetworkPresets {
  private NetworkPresets() {}

  /** Whether {@code spec} names a preset (rather than, say, a file). */
  public static boolean isPreset(String spec) {
    return spec.equals("mlp") || spec.startsWith("mlp:") || spec.equals("lenet");
  }

  /** Whether {@code spec} is a preset that can be built: a name, and for {@code mlp:} positive sizes. */
  public static boolean valid(String spec) {
    if (spec == null || !isPreset(spec)) {
      return false;
    }
    try {
      hidden(spec);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * The preset's configuration as JSON, for {@code inputs} features and {@code classes} classes.
   *
   * @throws IllegalArgumentException naming the spec and what is wrong with it
   */
  public static String json(String spec, long inputs, int classes, long seed, double learningRate) {
    if (!isPreset(spec)) {
      throw new IllegalArgumentException(spec + ": not a preset network (mlp, mlp:H1,H2,..., lenet)");
    }
    if (inputs < 1 || classes < 2) {
      throw new IllegalArgumentException(spec + ": needs the number of input features (>= 1) and of classes (>= 2), "
          + "got " + inputs + " and " + classes);
    }
    return spec.equals("lenet") ? lenet(spec, inputs, classes, seed, learningRate)
        : mlp(hidden(spec), inputs, classes, seed, learningRate);
  }

  /** The hidden layers' sizes of an {@code mlp} spec (256 for a bare {@code mlp}). */
  public static int[] hidden(String spec) {
    if (!spec.contains(":")) {
      return new int[] {256};
    }
    try {
      String[] parts = spec.substring(spec.indexOf(':') + 1).split(",");
      int[] sizes = new int[parts.length];
      for (int i = 0; i < parts.length; i++) {
        sizes[i] = Integer.parseInt(parts[i].trim());
        if (sizes[i] < 1) {
          throw new NumberFormatException(parts[i]);
        }
      }
      return sizes;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(spec + ": the hidden layer sizes must be positive whole numbers, e.g. "
          + "mlp:512,256");
    }
  }

  private static String mlp(int[] hidden, long inputs, int classes, long seed, double learningRate) {
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

  private static String lenet(String spec, long inputs, int classes, long seed, double learningRate) {
    int side = (int) Math.round(Math.sqrt(inputs));
    if ((long) side * side != inputs || side < 12) {
      throw new IllegalArgumentException(spec + " needs square single-channel images of at least 12x12 pixels, but "
          + "the features have " + inputs + " values");
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
