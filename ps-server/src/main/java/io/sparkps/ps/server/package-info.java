/**
 * Internal: the state of one parameter-server shard (variable slices, optimizers, consistency
 * control, waits and snapshots), on the codecs of {@link io.sparkps.ps.wire}. Not a public API; a shard is served by the package's {@code ParameterServer}.
 */
package io.sparkps.ps.server;
