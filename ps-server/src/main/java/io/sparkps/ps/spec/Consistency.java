package io.sparkps.ps.spec;

/** How a parameter server applies the gradients of concurrent workers to a group of variables. */
public enum Consistency {
  /** Apply each gradient on arrival; reads never wait. */
  ASYNC,
  /**
   * Bulk-synchronous: the gradients of all workers for step t are averaged and applied once, and
   * a read for step t+1 waits until that has happened.
   */
  SYNC,
  /** Stale-synchronous: apply on arrival, but no worker may read more than s clocks ahead of the slowest. */
  SSP
}
