/**
 * Internal: the training loop. {@link io.sparkps.ml.training.Dl4jTrainer} checks the data and
 * launches the run; each worker ({@code TrainWorker}) builds its network, declares its variables
 * and runs its steps against the shards ({@link io.sparkps.ml.training.PsTrainingStep}), with the
 * evaluator beside it. What the model reads and how a minibatch becomes a step is a
 * {@link io.sparkps.ml.training.ModelInputs}: {@link io.sparkps.ml.training.DenseInputs} here, the
 * embedding model's in {@code io.sparkps.ml.embedding}.
 */
package io.sparkps.ml.training;
