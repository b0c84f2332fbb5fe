/**
 * The training options: one immutable {@link io.sparkps.ml.param.TrainingConfig} that the
 * estimator's Params, {@code TrainSpec}, the command line and the notebooks each map onto.
 */
package io.sparkps.ml.param;
