package io.sparkps.ml.network;

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
public final class GraphNet extends Net {
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
  public Model model() {
    return graph;
  }

  @Override
  public List<Parameter> parameters() {
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
  public BaseOutputLayer outputLayer() {
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

  /**
   * As for any net, from the first layer that reads the input; for a graph that reads its input only
   * through {@code SubsetVertex}es (as a Wide &amp; Deep graph does), up to the end of the last subset.
   */
  @Override
  public long inputWidth() {
    if (firstVertex() != null) {
      return super.inputWidth();
    }
    ComputationGraphConfiguration conf = graph.getConfiguration();
    String input = conf.getNetworkInputs().get(0);
    long end = 0;
    for (Map.Entry<String, List<String>> v : conf.getVertexInputs().entrySet()) {
      if (v.getValue().contains(input)
          && conf.getVertices().get(v.getKey()) instanceof org.deeplearning4j.nn.conf.graph.SubsetVertex subset) {
        end = Math.max(end, subset.getTo() + 1L);
      }
    }
    return end > 0 ? end : super.inputWidth();
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
  public boolean miniBatch() {
    return graph.getConfiguration().getDefaultConfiguration().isMiniBatch();
  }

  @Override
  public void setBatch(DataSet batch) {
    graph.setInputs(batch.getFeatures());
    graph.setLabels(batch.getLabels());
    graph.setLayerMaskArrays(batch.getFeaturesMaskArray() == null ? null
        : new INDArray[] {batch.getFeaturesMaskArray()},
        batch.getLabelsMaskArray() == null ? null : new INDArray[] {batch.getLabelsMaskArray()});
  }

  @Override
  public int reuseForwardPass(boolean inputGradient) {
    return ForwardReuse.install(graph); // (its dense layers compute their input gradients whatever inputGradient says)
  }

  /** The graph's layers in the order of the forward pass (topological), with their positions in it. */
  private List<Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex>> layerVertices() {
    org.deeplearning4j.nn.graph.vertex.GraphVertex[] vertices = graph.getVertices();
    int[] order = graph.topologicalSortOrder();
    List<Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex>> out = new ArrayList<>();
    for (int position = 0; position < order.length; position++) {
      if (vertices[order[position]].hasLayer()) {
        out.add(Map.entry(position, vertices[order[position]]));
      }
    }
    return out;
  }

  @Override
  public List<LayerPasses.Unit> layerUnits() {
    List<LayerPasses.Unit> units = new ArrayList<>();
    for (Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex> v : layerVertices()) {
      Layer layer = v.getValue().getLayer();
      String layerName = layer.conf().getLayer().getLayerName();
      List<String> names = layer.paramTable().keySet().stream().map(k -> layerName + "_" + k).toList();
      if (!names.isEmpty()) {
        units.add(new LayerPasses.Unit(v.getKey(), names));
      }
    }
    return units;
  }

  @Override
  public boolean hookLayers(LayerPasses transfers) {
    List<Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex>> hooked = new ArrayList<>();
    for (Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex> v : layerVertices()) {
      if (v.getValue().isOutputVertex()) {
        continue;
      }
      if (!(v.getValue() instanceof org.deeplearning4j.nn.graph.vertex.impl.LayerVertex)
          || !HookedLayer.hookable(v.getValue().getLayer())) {
        return false;
      }
      hooked.add(v);
    }
    if (hooked.isEmpty()) {
      return false;
    }
    Layer[] layers = graph.getLayers();
    int last = hooked.get(hooked.size() - 1).getKey();
    for (Map.Entry<Integer, org.deeplearning4j.nn.graph.vertex.GraphVertex> v : hooked) {
      org.deeplearning4j.nn.graph.vertex.impl.LayerVertex vertex =
          (org.deeplearning4j.nn.graph.vertex.impl.LayerVertex) v.getValue();
      HookedLayer layer = new HookedLayer(vertex.getLayer(), v.getKey(), v.getKey() == last, transfers);
      for (int i = 0; i < layers.length; i++) {
        if (layers[i] == vertex.getLayer()) {
          layers[i] = layer;
        }
      }
      vertex.setLayer(layer);
    }
    return true;
  }

  @Override
  public INDArray computeGradientAndInputGradient() {
    RecordingInput input = RecordingInput.install(graph);
    graph.computeGradientAndScore();
    INDArray gradient = input.last;
    input.last = null;
    if (gradient == null) {
      throw new IllegalStateException("the graph's backward pass gave no gradient by its input '"
          + input.getVertexName() + "': does a layer with parameters read it?");
    }
    return gradient;
  }

  /**
   * The graph's input vertex, keeping the gradient by the input: DL4J computes it (the epsilons of
   * the vertices that read the input are summed into the input vertex) but clears it at the end of
   * the backward pass, so this vertex remembers the last epsilon set on it. Without workspaces (both
   * modes set to none on install) that array outlives the pass.
   */
  private static final class RecordingInput extends org.deeplearning4j.nn.graph.vertex.impl.InputVertex {
    private INDArray last;

    private RecordingInput(ComputationGraph graph, org.deeplearning4j.nn.graph.vertex.GraphVertex replaced) {
      super(graph, replaced.getVertexName(), replaced.getVertexIndex(), replaced.getOutputVertices(),
          graph.getConfiguration().getDataType());
    }

    /** The graph's input vertex as a recording one (put in its place once; again if the graph was re-initialized). */
    public static RecordingInput install(ComputationGraph graph) {
      org.deeplearning4j.nn.graph.vertex.GraphVertex[] vertices = graph.getVertices();
      String name = graph.getConfiguration().getNetworkInputs().get(0);
      for (int i = 0; i < vertices.length; i++) {
        if (vertices[i].isInputVertex() && vertices[i].getVertexName().equals(name)) {
          if (!(vertices[i] instanceof RecordingInput)) {
            // (DL4J 1.0.0-M2.1's graph backward pass picks its activation-gradient workspaces by the inference mode)
            graph.getConfiguration().setTrainingWorkspaceMode(org.deeplearning4j.nn.conf.WorkspaceMode.NONE);
            graph.getConfiguration().setInferenceWorkspaceMode(org.deeplearning4j.nn.conf.WorkspaceMode.NONE);
            vertices[i] = new RecordingInput(graph, vertices[i]);
          }
          return (RecordingInput) vertices[i];
        }
      }
      throw new IllegalStateException("the graph has no input vertex '" + name + "'");
    }

    @Override
    public void setEpsilon(INDArray epsilon) {
      super.setEpsilon(epsilon);
      if (epsilon != null) {
        last = epsilon;
      }
    }
  }

  @Override
  public void computeGradientAndScore() {
    graph.computeGradientAndScore();
  }

  @Override
  public void applyUpdater(int iteration, int epoch, int batchSize) {
    graph.getUpdater(true).update(graph.gradient(), iteration, epoch, batchSize,
        org.deeplearning4j.nn.workspace.LayerWorkspaceMgr.noWorkspaces());
  }

  @Override
  public INDArray flatGradients() {
    return graph.getFlattenedGradients();
  }

  @Override
  public INDArray output(INDArray x) {
    return graph.outputSingle(x);
  }

  @Override
  public double score(DataSet data) {
    return graph.score(data);
  }

  @Override
  public Net withIdentityOutput() {
    ComputationGraphConfiguration conf = graph.getConfiguration().clone();
    String name = conf.getNetworkOutputs().get(0);
    ((BaseLayer) ((LayerVertex) conf.getVertices().get(name)).getLayerConf().getLayer())
        .setActivationFn(new ActivationIdentity());
    ComputationGraph raw = new ComputationGraph(conf);
    raw.init(graph.params().dup(), false);
    GemmConvolution.install(raw);
    return new GraphNet(raw);
  }

  /**
   * Replaces, in place, each layer of {@code graph} for which {@code replacement} gives another
   * (null: keep it), in its vertex and in the graph's list of layers; returns how many.
   */
  static int replaceLayers(ComputationGraph graph, java.util.function.UnaryOperator<Layer> replacement) {
    Layer[] layers = graph.getLayers();
    int replaced = 0;
    for (org.deeplearning4j.nn.graph.vertex.GraphVertex vertex : graph.getVertices()) {
      if (!(vertex instanceof org.deeplearning4j.nn.graph.vertex.impl.LayerVertex lv)) {
        continue;
      }
      Layer original = lv.getLayer();
      Layer next = replacement.apply(original);
      if (next != null) {
        lv.setLayer(next);
        for (int i = 0; i < layers.length; i++) {
          if (layers[i] == original) {
            layers[i] = next;
          }
        }
        replaced++;
      }
    }
    return replaced;
  }
}
