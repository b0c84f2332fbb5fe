/**
 * The SparkPS parameter server: {@link io.sparkps.ps.ParameterServer} hosts shards of named
 * float32 variables and {@link io.sparkps.ps.PsClient} creates, initializes, pulls and pushes
 * them across all shards in parallel. Nothing in this package exposes gRPC types.
 */
package io.sparkps.ps;
