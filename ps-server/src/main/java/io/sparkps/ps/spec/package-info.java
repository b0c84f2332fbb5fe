/**
 * What a run declares to its parameter servers, and what they answer: variables ({@link
 * io.sparkps.ps.spec.VariableSpec}, {@link io.sparkps.ps.spec.Initializer}) and embedding tables
 * ({@link io.sparkps.ps.spec.EmbeddingSpec}), their optimizers and learning-rate schedules,
 * consistency groups, the run's token, and the errors a call can end with. Public API, at the
 * bottom of the parameter server's packages: it names nothing else of SparkPS, so the client and
 * server ({@code io.sparkps.ps}) and the internal packages below them all build on it.
 */
package io.sparkps.ps.spec;
