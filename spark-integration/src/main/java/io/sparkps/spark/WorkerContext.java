package io.sparkps.spark;

import io.sparkps.ps.PsClient;
import java.util.Iterator;

/**
 * What a worker function gets: its role and index, its partition of the data, a client of the
 * run's parameter servers (made with its worker index), and a progress reporter.
 *
 * @param <T> the type of the data's rows
 */
public interface WorkerContext<T> {
  /** CHIEF for worker 0, WORKER otherwise. */
  Role role();

  /** This worker's index, 0..numWorkers-1. */
  int index();

  /** Workers in the run. */
  int numWorkers();

  /** Whether this is worker 0. */
  default boolean isChief() {
    return index() == 0;
  }

  /** The barrier stage's attempt: 0 first, more after a retry (variables then hold their state). */
  int stageAttempt();

  /** The host this worker runs on. */
  String host();

  /** Where the ps shards served (host:port, by shard) when this task began. */
  java.util.List<String> psAddresses();

  /** This worker's partition of the data; it can be iterated once. */
  Iterator<T> data();

  /** A connected client of all ps shards; the runtime closes it. */
  PsClient ps();

  /** Reports progress to the driver. */
  ProgressReporter progress();

  /**
   * Waits until every worker of this stage attempt has reached the same call, at most the
   * cluster's {@code syncWaitTimeout} (the timeout names the workers missing). Every worker must
   * call it equally often, on every path that does not fail.
   */
  void barrier();
}
