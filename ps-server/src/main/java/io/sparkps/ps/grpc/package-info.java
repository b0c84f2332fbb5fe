/**
 * Internal: the gRPC adapters of the parameter server (method descriptors, frame marshalling,
 * authentication, status mapping, the service and the per-shard client stub). Not a public API.
 */
package io.sparkps.ps.grpc;
