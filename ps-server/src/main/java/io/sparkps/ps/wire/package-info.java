/**
 * Internal: the wire toolbox both ends of the parameter server share, below the client
 * ({@code io.sparkps.ps}), the shard ({@link io.sparkps.ps.server}), the bulk data plane
 * ({@link io.sparkps.ps.bulk}) and the gRPC adapters ({@link io.sparkps.ps.grpc}): payload
 * layout and pooled buffers, the sparse encoding, finiteness checks, the limits a request must
 * keep, the conversions between the API's specs and their protos, and the errors of the protocol
 * with their mapping to gRPC status codes. It depends on nothing of SparkPS but {@link io.sparkps.ps.spec}
 * and the generated protos. Not a public API.
 */
package io.sparkps.ps.wire;
