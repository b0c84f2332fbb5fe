/**
 * Deeplearning4j networks trained against SparkPS variables: the mapping of a network's
 * parameters to variables (with each layer's updater and regularization moved to the servers)
 * and the worker's training step. The Spark ML Estimator builds on these (issue 4, in progress).
 */
package io.sparkps.ml;
