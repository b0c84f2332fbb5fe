/**
 * Internal: the state of one parameter-server shard (variable slices, optimizers, consistency
 * control, waits and snapshots), on the codecs of {@link io.sparkps.ps.wire}. Not a public API; use {@link io.sparkps.ps.ParameterServer}.
 */
package io.sparkps.ps.server;
