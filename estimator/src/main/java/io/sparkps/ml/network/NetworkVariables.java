package io.sparkps.ml.network;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.VariableSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.indexing.NDArrayIndex;

/**
 * A network's parameters as SparkPS variables: one 1-D variable per DL4J parameter ({@code 0_W},
 * {@code 0_b}, {@code 1_mean}, ...), each a stretch of the network's flattened parameter vector,
 * with the optimizer of its layer's updater and regularization. Pulls and pushes go through views
 * of the flattened parameters and gradients, so no array is copied on the worker.
 */
public final class NetworkVariables {
  /** Where one parameter lives in the flattened vector. */
  private record Stretch(long offset, long length, boolean perExample) {}

  private final Map<String, Stretch> stretches = new LinkedHashMap<>();
  private final List<VariableSpec> specs = new ArrayList<>();

  private NetworkVariables() {}

  /**
   * The variables of an initialized network, in group {@code group}, initialized from the
   * network's current parameters.
   */
  public static NetworkVariables of(MultiLayerNetwork net, String group) {
    return of(Net.of(net), group);
  }

  /** The variables of an initialized graph (one input, one output); see {@link #of(MultiLayerNetwork, String)}. */
  public static NetworkVariables of(ComputationGraph graph, String group) {
    return of(Net.of(graph), group);
  }

  public static NetworkVariables of(Net net, String group) {
    return of(net, group, false);
  }

  /**
   * As above; with {@code workerUpdates}, the shards keep no optimizer: each worker runs DL4J's
   * updaters itself and pushes their updates, which the shards subtract as they come.
   */
  public static NetworkVariables of(Net net, String group, boolean workerUpdates) {
    NetworkVariables v = new NetworkVariables();
    INDArray flat = net.params();
    for (Net.Parameter p : net.parameters()) {
      String name = p.name();
      INDArray view = p.view();
      v.stretches.put(name, new Stretch(Net.offsetIn(flat, view), view.length(),
          p.layer().updaterDivideByMinibatch(p.key())));
      Net.checkUpdaterConfig(p.layer(), name);
      org.deeplearning4j.nn.conf.layers.Layer conf = p.layer().conf().getLayer();
      v.specs.add(VariableSpec.builder().setName(name).setShape(view.length())
          .optInitializer(Initializer.values(v.stretchOf(flat, name)))
          .optOptimizer(workerUpdates ? io.sparkps.ps.spec.OptimizerConfig.noOp()
              : OptimizerMapping.of(name, conf.getUpdaterByParam(p.key()), conf.getRegularizationByParam(p.key())))
          .optGroup(group == null ? ConsistencyGroup.DEFAULT_NAME : group).build());
    }
    return v;
  }

  /** The variable specs, in the network's parameter order. */
  public List<VariableSpec> specs() {
    return List.copyOf(specs);
  }

  /** The variable names. */
  public List<String> names() {
    return List.copyOf(stretches.keySet());
  }

  /**
   * Whether the variable's gradient is a sum over the minibatch that DL4J's updater divides by
   * the minibatch size (false for parameters such as BatchNorm's running statistics).
   */
  public boolean dividesByMinibatch(String name) {
    return stretches.get(name).perExample();
  }

  /** Views of {@code flat} (the network's parameters or gradients), one per variable. */
  public Map<String, INDArray> views(INDArray flat) {
    Map<String, INDArray> views = new LinkedHashMap<>();
    for (String name : stretches.keySet()) {
      views.put(name, stretchOf(flat, name));
    }
    return views;
  }

  private INDArray stretchOf(INDArray flat, String name) {
    Stretch s = stretches.get(name);
    return flat.rank() == 1 ? flat.get(NDArrayIndex.interval(s.offset(), s.offset() + s.length()))
        : flat.get(NDArrayIndex.point(0), NDArrayIndex.interval(s.offset(), s.offset() + s.length()));
  }
}
