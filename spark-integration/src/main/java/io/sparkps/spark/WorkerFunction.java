package io.sparkps.spark;

import java.io.Serializable;

/**
 * The code every worker runs in the barrier stage (between-graph: each builds its own model).
 *
 * @param <T> the type of the data's rows
 * @param <R> the result returned to the driver (serializable)
 */
@FunctionalInterface
public interface WorkerFunction<T, R> extends Serializable {
  /** Trains on {@code context}'s partition against its parameter servers. */
  R run(WorkerContext<T> context) throws Exception;
}
