package io.sparkps.ml;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.InputPreProcessor;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.BaseLayer;
import org.deeplearning4j.nn.conf.layers.BaseOutputLayer;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.nd4j.linalg.activations.impl.ActivationIdentity;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.api.DataSet;

/** A ComputationGraph with one input and one output; parameters are named {@code <layer name>_<key>}. */
final class GraphNet extends Net {
  private final ComputationGraph graph;

  GraphNet(ComputationGraph graph) {
    ComputationGraphConfiguration conf = graph.getConfiguration();
    if (conf.getNetworkInputs().size() != 1 || conf.getNetworkOutputs().size() != 1) {
      throw new IllegalArgumentException("the ComputationGraph has " + conf.getNetworkInputs().size() + " inputs and "
          + conf.getNetworkOutputs().size() + " outputs: SparkPS trains graphs with one input (the features column) "
          + "and one output (the label column)");
    }
    this.graph = graph;
  }

  @Override
  Model model() {
    return graph;
  }

  @Override
  List<Parameter> parameters() {
    List<Parameter> out = new ArrayList<>();
    for (Layer layer : graph.getLayers()) {
      String layerName = layer.conf().getLayer().getLayerName();
      for (Map.Entry<String, INDArray> p : layer.paramTable().entrySet()) {
        out.add(new Parameter(layerName + "_" + p.getKey(), p.getKey(), layer, p.getValue()));
      }
    }
    return out;
  }

  private LayerVertex vertex(String name) {
    GraphVertex v = graph.getConfiguration().getVertices().get(name);
    return v instanceof LayerVertex lv ? lv : null;
  }

  @Override
  BaseOutputLayer outputLayer() {
    String name = graph.getConfiguration().getNetworkOutputs().get(0);
    LayerVertex v = vertex(name);
    if (v == null || !(v.getLayerConf().getLayer() instanceof BaseOutputLayer out)) {
      throw new IllegalArgumentException("the graph's output '" + name + "' is not an output layer: SparkPS trains "
          + "graphs whose output is an OutputLayer");
    }
    return out;
  }

  private LayerVertex firstVertex() {
    ComputationGraphConfiguration conf = graph.getConfiguration();
    String input = conf.getNetworkInputs().get(0);
    for (String name : conf.getTopologicalOrderStr()) {
      List<String> inputs = conf.getVertexInputs().get(name);
      if (inputs != null && inputs.contains(input)) {
        return vertex(name);
      }
    }
    return null;
  }

  @Override
  FeedForwardLayer inputLayer() {
    LayerVertex v = firstVertex();
    return v != null && v.getLayerConf().getLayer() instanceof FeedForwardLayer f ? f : null;
  }

  @Override
  InputPreProcessor inputPreProcessor() {
    LayerVertex v = firstVertex();
    return v == null ? null : v.getPreProcessor();
  }

  @Override
  BackpropType backpropType() {
    return graph.getConfiguration().getBackpropType();
  }

  @Override
  boolean miniBatch() {
    return graph.getConfiguration().getDefaultConfiguration().isMiniBatch();
  }

  @Override
  void setBatch(DataSet batch) {
    graph.setInputs(batch.getFeatures());
    graph.setLabels(batch.getLabels());
    graph.setLayerMaskArrays(batch.getFeaturesMaskArray() == null ? null
        : new INDArray[] {batch.getFeaturesMaskArray()},
        batch.getLabelsMaskArray() == null ? null : new INDArray[] {batch.getLabelsMaskArray()});
  }

  @Override
  int reuseForwardPass(boolean inputGradient) {
    return 0; // (the graph's layers keep DL4J's backward pass)
  }

  @Override
  INDArray computeGradientAndInputGradient() {
    throw new IllegalArgumentException("embedding columns train a MultiLayerNetwork for now: give a "
        + "MultiLayerConfiguration whose first layer reads the pooled embeddings and numeric columns");
  }

  @Override
  void computeGradientAndScore() {
    graph.computeGradientAndScore();
  }

  @Override
  void applyUpdater(int iteration, int epoch, int batchSize) {
    graph.getUpdater(true).update(graph.gradient(), iteration, epoch, batchSize,
        org.deeplearning4j.nn.workspace.LayerWorkspaceMgr.noWorkspaces());
  }

  @Override
  INDArray flatGradients() {
    return graph.getFlattenedGradients();
  }

  @Override
  INDArray output(INDArray x) {
    return graph.outputSingle(x);
  }

  @Override
  double score(DataSet data) {
    return graph.score(data);
  }

  @Override
  Net withIdentityOutput() {
    ComputationGraphConfiguration conf = graph.getConfiguration().clone();
    String name = conf.getNetworkOutputs().get(0);
    ((BaseLayer) ((LayerVertex) conf.getVertices().get(name)).getLayerConf().getLayer())
        .setActivationFn(new ActivationIdentity());
    ComputationGraph raw = new ComputationGraph(conf);
    raw.init(graph.params().dup(), false);
    return new GraphNet(raw);
  }
}
