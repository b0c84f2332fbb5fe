/**
 * SparkPS's public API for training Deeplearning4j networks from Spark: the Spark ML
 * {@link io.sparkps.ml.Dl4jEstimator} and {@link io.sparkps.ml.Dl4jModel}, a fit's handle
 * {@link io.sparkps.ml.FitJob} and its {@link io.sparkps.ml.TrainingSummary},
 * {@link io.sparkps.ml.Experiment} with its {@link io.sparkps.ml.TrainSpec} and
 * {@link io.sparkps.ml.EvalSpec}, the networks' presets and Keras import. The training options
 * are {@link io.sparkps.ml.param.TrainingConfig}; the embedding columns,
 * {@link io.sparkps.ml.param.EmbeddingColumn}. Everything else in the subpackages is the
 * estimator's own machinery: {@code training} (the loop), {@code network} (DL4J adapters),
 * {@code checkpoint}, {@code scoring}, {@code data}.
 */
package io.sparkps.ml;
