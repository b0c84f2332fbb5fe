/**
 * A SparkPS training cluster inside one Spark application: parameter-server tasks in a job of
 * their own, the chief and the workers in one barrier stage, an optional evaluator job, and a
 * coordinator in the driver. {@link io.sparkps.spark.TrainingCluster} is the entry point.
 */
package io.sparkps.spark;
