/**
 * Internal: a worker's DL4J network as SparkPS drives it. {@link io.sparkps.ml.network.Net} over a
 * {@code MultiLayerNetwork} or {@code ComputationGraph} (one step's passes, the gradient with
 * respect to the input, the layers' hooks for overlapped transfers), the mapping of its parameters
 * and updaters to ps variables ({@link io.sparkps.ml.network.NetworkVariables},
 * {@link io.sparkps.ml.network.OptimizerMapping}), and the layers SparkPS puts in place of DL4J's
 * for speed ({@link io.sparkps.ml.network.ForwardReuse},
 * {@link io.sparkps.ml.network.GemmConvolution}). Names nothing of the packages above it.
 */
package io.sparkps.ml.network;
