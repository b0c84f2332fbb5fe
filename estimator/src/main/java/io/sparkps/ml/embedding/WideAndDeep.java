package io.sparkps.ml.embedding;

import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.MergeVertex;
import org.deeplearning4j.nn.conf.graph.SubsetVertex;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The network of a Wide &amp; Deep model (and of DeepFM, with the factorization term) over an
 * embedding model's inputs, as a DL4J ComputationGraph with one input: the deep part (the pooled
 * embeddings and the numeric values) goes through ReLU layers; the linear part (the numeric values
 * again, the wide weights and the factorization term, whichever are on) skips them and meets the
 * last hidden layer in the output layer, so the model's logit is the deep part's plus a learned
 * multiple of each linear input: with the wide part, the sum of a weight per (column, id), as in
 * Cheng et al.'s Wide &amp; Deep; with the factorization term too, DeepFM's first- and second-order
 * parts. Vertices: {@code deep-input}, {@code deep-1}..{@code deep-n}, {@code linear-input}
 * (when there is a linear part), {@code merge}, {@code output}.
 */
public final class WideAndDeep {
  private WideAndDeep() {}

  /**
   * The graph over {@code inputs} with hidden layers of {@code hidden} units, Adam at
   * {@code learningRate}: {@code classes} softmax outputs (MCXENT), or one sigmoid output (binary
   * cross-entropy, labels 0/1) when {@code classes} is 1.
   */
  public static ComputationGraphConfiguration network(EmbeddingInputs inputs, int[] hidden, int classes, long seed,
      double learningRate) {
    if (hidden.length == 0 || classes < 1) {
      throw new IllegalArgumentException("a Wide & Deep network needs at least one hidden layer and one output, got "
          + "hidden " + java.util.Arrays.toString(hidden) + " and " + classes + " outputs");
    }
    int deep = inputs.embeddingWidth() + inputs.numericCols().size();
    int linear = inputs.width() - inputs.embeddingWidth();
    ComputationGraphConfiguration.GraphBuilder g = new NeuralNetConfiguration.Builder().seed(seed)
        .dataType(DataType.FLOAT).updater(new Adam(learningRate)).graphBuilder().addInputs("features")
        .addVertex("deep-input", new SubsetVertex(0, deep - 1), "features");
    String last = "deep-input";
    long in = deep;
    for (int i = 0; i < hidden.length; i++) {
      String name = "deep-" + (i + 1);
      g.addLayer(name, new DenseLayer.Builder().nIn(in).nOut(hidden[i]).activation(Activation.RELU).build(), last);
      last = name;
      in = hidden[i];
    }
    if (linear > 0) {
      g.addVertex("linear-input", new SubsetVertex(inputs.embeddingWidth(), inputs.width() - 1), "features")
          .addVertex("merge", new MergeVertex(), last, "linear-input");
      last = "merge";
      in += linear;
    }
    OutputLayer.Builder out = classes == 1
        ? new OutputLayer.Builder(LossFunctions.LossFunction.XENT).activation(Activation.SIGMOID)
        : new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).activation(Activation.SOFTMAX);
    return g.addLayer("output", out.nIn(in).nOut(classes).build(), last).setOutputs("output").build();
  }
}
