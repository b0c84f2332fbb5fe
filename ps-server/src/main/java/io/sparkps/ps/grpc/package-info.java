/**
 * Internal: the gRPC adapters of the parameter server (method descriptors, frame marshalling,
 * authentication, the service, the per-shard client stub and the client's connections). Not a public API.
 */
package io.sparkps.ps.grpc;
