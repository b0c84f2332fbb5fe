/**
 * Internal: a trained model's batched inference over a DataFrame's partitions, with no parameter
 * server. How the network's input is read is a {@link io.sparkps.ml.scoring.ModelScoring}:
 * {@link io.sparkps.ml.scoring.DenseScoring} here, the embedding model's in
 * {@code io.sparkps.ml.embedding}.
 */
package io.sparkps.ml.scoring;
