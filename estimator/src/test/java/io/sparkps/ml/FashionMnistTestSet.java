package io.sparkps.ml;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.IdxFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/** Fashion-MNIST's 10,000 test images (Debian's package), the tests' 784-256-10 MLP, and its accuracy. */
public final class FashionMnistTestSet {
  private final INDArray images;
  private final float[] labels;

  private FashionMnistTestSet(INDArray images, float[] labels) {
    this.images = images;
    this.labels = labels;
  }

  /** Reads the test set, pixels scaled to [0, 1]. */
  static FashionMnistTestSet read() {
    try {
      IdxFile x = IdxFile.read(IdxDataFrames.FASHION_MNIST.resolve("t10k-images-idx3-ubyte.gz"));
      return new FashionMnistTestSet(Nd4j.create(x.values(), new long[] {x.items(), 784}, 'c').divi(255),
          IdxFile.read(IdxDataFrames.FASHION_MNIST.resolve("t10k-labels-idx1-ubyte.gz")).values());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A 784-256-10 MLP (ReLU, softmax, Adam 1e-3, seed 42) as JSON. */
  public static String mlp() {
    return new NeuralNetConfiguration.Builder().seed(42).dataType(DataType.FLOAT).updater(new Adam(1e-3)).list()
        .layer(new DenseLayer.Builder().nIn(784).nOut(256).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(256).nOut(10)
            .activation(Activation.SOFTMAX).build())
        .build().toJson();
  }

  /** The share of test images {@code net} classifies right. */
  double accuracy(MultiLayerNetwork net) {
    INDArray predicted = net.output(images).argMax(1);
    int correct = 0;
    for (int i = 0; i < labels.length; i++) {
      if (predicted.getInt(i) == (int) labels[i]) {
        correct++;
      }
    }
    return correct / (double) labels.length;
  }
}
