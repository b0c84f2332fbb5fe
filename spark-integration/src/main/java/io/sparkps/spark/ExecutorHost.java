package io.sparkps.spark;

import org.apache.spark.SparkEnv;

/** The host address of the executor a task runs on: where its servers bind. */
final class ExecutorHost {
  private ExecutorHost() {}

  static String get() {
    return SparkEnv.get().blockManager().blockManagerId().host();
  }

  static String executorId() {
    return SparkEnv.get().executorId();
  }
}
