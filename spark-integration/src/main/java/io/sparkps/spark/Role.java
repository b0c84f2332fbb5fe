package io.sparkps.spark;

/** The roles of a training cluster, as in Distributed TensorFlow. */
public enum Role {
  /** Hosts variable shards. */
  PS,
  /** Worker 0: initializes the variables, trains, writes checkpoints. */
  CHIEF,
  /** Workers 1..N-1: train. */
  WORKER,
  /** Evaluates the variables as training advances, in a job of its own. */
  EVALUATOR;

  /** The role of worker {@code index}. */
  public static Role ofWorker(int index) {
    return index == 0 ? CHIEF : WORKER;
  }
}
