/**
 * The embedding model: categorical columns read through embedding tables on the parameter servers.
 * Users name the columns ({@link io.sparkps.ml.param.EmbeddingColumn}) and may build a Wide &
 * Deep network ({@link io.sparkps.ml.embedding.WideAndDeep}); the rest plugs into the training
 * loop and the model's scoring behind their interfaces, so that nothing above asks which kind of
 * model it has: {@link io.sparkps.ml.embedding.EmbeddingTraining} (the workers' reads and steps,
 * the tables' export) and {@link io.sparkps.ml.embedding.TableScoring} (the trained tables, loaded
 * or joined).
 */
package io.sparkps.ml.embedding;
