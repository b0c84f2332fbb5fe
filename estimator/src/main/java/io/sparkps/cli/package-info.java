/**
 * The {@code sparkps} command line: {@code train}, {@code evaluate}, {@code predict},
 * {@code inspect} and {@code demo}, run with {@code spark-submit --class io.sparkps.cli.SparkPsCli}
 * or on an embedded local Spark. Exit codes: 0 success, 1 training failed, 2 bad arguments.
 */
package io.sparkps.cli;
