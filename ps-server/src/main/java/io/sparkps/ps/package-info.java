/**
 * The SparkPS parameter server's API: a {@link io.sparkps.ps.ParameterServer} hosts shards of named
 * float32 variables and embedding tables, and a {@link io.sparkps.ps.PsClient} creates,
 * initializes, pulls and pushes them across all shards in parallel. Both are interfaces, made by
 * their builders with the implementation the class path's {@link io.sparkps.ps.PsProvider} brings
 * (ps-server's gRPC one). This package, {@code spec} and {@code tls} are the whole API: they name
 * no class of the implementation's packages, and this package names no gRPC type either.
 */
package io.sparkps.ps;
