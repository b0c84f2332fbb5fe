package io.sparkps.ml.network;

import org.deeplearning4j.nn.api.Layer;
import org.deeplearning4j.nn.api.layers.IOutputLayer;
import org.deeplearning4j.nn.api.layers.RecurrentLayer;
import org.deeplearning4j.nn.gradient.Gradient;
import org.deeplearning4j.nn.layers.FrozenLayer;
import org.deeplearning4j.nn.layers.FrozenLayerWithBackprop;
import org.deeplearning4j.nn.layers.wrapper.BaseWrapperLayer;
import org.deeplearning4j.nn.workspace.LayerWorkspaceMgr;
import org.nd4j.common.primitives.Pair;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A layer of a worker's network that tells {@link LayerPasses} where the passes are: before
 * its training forward pass (so that it waits for its parameters), after it when it is the last
 * layer before the output layer (which then waits for the rest), and before its backward pass (so
 * that the gradients of the layers above it are pushed meanwhile). Everything else is the layer's.
 */
public final class HookedLayer extends BaseWrapperLayer {
  private static final long serialVersionUID = 1L;
  private final int position;
  private final boolean lastBeforeOutput;
  private final transient LayerPasses transfers;

  HookedLayer(Layer layer, int position, boolean lastBeforeOutput, LayerPasses transfers) {
    super(layer);
    this.position = position;
    this.lastBeforeOutput = lastBeforeOutput;
    this.transfers = transfers;
  }

  /**
   * Whether a layer can be hooked: not an output layer (DL4J's networks treat it apart), nor a
   * recurrent, frozen or already wrapped one (DL4J looks at those by their class).
   */
  static boolean hookable(Layer layer) {
    return !(layer instanceof IOutputLayer) && !(layer instanceof RecurrentLayer) && !(layer instanceof FrozenLayer)
        && !(layer instanceof FrozenLayerWithBackprop) && !(layer instanceof BaseWrapperLayer);
  }

  /**
   * Hooks every layer of a MultiLayerNetwork's {@code layers} (its own array) but the output layer, in
   * place, the position of each its index; false, with nothing changed, when one cannot be hooked or
   * there is no layer before the output layer.
   */
  static boolean hookAllButOutput(Layer[] layers, LayerPasses transfers) {
    if (layers.length < 2) {
      return false;
    }
    for (int i = 0; i < layers.length - 1; i++) {
      if (!hookable(layers[i])) {
        return false;
      }
    }
    for (int i = 0; i < layers.length - 1; i++) {
      layers[i] = new HookedLayer(layers[i], i, i == layers.length - 2, transfers);
    }
    return true;
  }

  @Override
  public INDArray activate(boolean training, LayerWorkspaceMgr workspaceMgr) {
    before(training);
    return after(training, underlying.activate(training, workspaceMgr));
  }

  @Override
  public INDArray activate(INDArray input, boolean training, LayerWorkspaceMgr workspaceMgr) {
    before(training);
    return after(training, underlying.activate(input, training, workspaceMgr));
  }

  @Override
  public Pair<Gradient, INDArray> backpropGradient(INDArray epsilon, LayerWorkspaceMgr workspaceMgr) {
    transfers.backward(position);
    return underlying.backpropGradient(epsilon, workspaceMgr);
  }

  private void before(boolean training) {
    if (training) {
      transfers.forward(position);
    }
  }

  private INDArray after(boolean training, INDArray out) {
    if (training && lastBeforeOutput) {
      transfers.forwardDone();
    }
    return out;
  }
}
