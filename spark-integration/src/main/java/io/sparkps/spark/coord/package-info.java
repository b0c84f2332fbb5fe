/**
 * Internal: the coordinator of a run, a token-authenticated gRPC service in the driver that is
 * the registry and rendezvous of the roles, collects their progress and captures the first
 * failure; and the client the tasks use to reach it.
 */
package io.sparkps.spark.coord;
