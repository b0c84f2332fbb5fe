package io.sparkps.spark;

import io.sparkps.ps.PsClient;

/** What an evaluator function gets: a ps client, a progress reporter, and when to stop. */
public interface EvaluatorContext {
  /** A connected client of all ps shards; the runtime closes it. Read with {@code read} (never waits). */
  PsClient ps();

  /** Reports evaluation metrics to the driver. */
  ProgressReporter progress();

  /** Whether training has finished (or the run is stopping): the evaluator should return soon. */
  boolean isStopping();
}
