package io.sparkps.ml.network;

import java.util.List;

/**
 * What a worker's network tells about its passes, layer by layer, once its layers are hooked
 * ({@link Net#hookLayers}): the forward pass is about to run a layer, or the output layer, and the
 * backward pass is about to run a layer (so the gradients of the layers above it are done). The
 * worker's overlapped transfers listen; every call comes from the thread that runs the passes.
 */
public interface LayerPasses {
  /** The variables of one layer and the layer's place in the forward pass (its position). */
  record Unit(int position, List<String> names) {}

  /** The forward pass is about to run the layer at {@code position}. */
  void forward(int position);

  /** The forward pass is about to run the output layer (or whatever remains after the hooked layers). */
  void forwardDone();

  /** The backward pass is about to run the layer at {@code position}: the layers above it are done. */
  void backward(int position);
}
