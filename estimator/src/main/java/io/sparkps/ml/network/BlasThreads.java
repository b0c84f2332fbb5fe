package io.sparkps.ml.network;

import java.util.Map;
import java.util.Optional;
import org.nd4j.linalg.api.blas.Blas;
import org.nd4j.linalg.factory.Nd4j;

/**
 * How many threads ND4J's OpenBLAS computes a matrix product with, for the tasks of one executor.
 *
 * <p>Unless told otherwise, OpenBLAS takes one thread per core of the machine for every product. An
 * executor runs several tasks at once, each worker computing its own products, so each of them
 * starting as many threads as the machine has cores oversubscribes the executor: on 2 cores, two
 * workers' MLP steps ran 1.7x slower than with one thread each, and the loss grows with the cores.
 * When neither {@code OMP_NUM_THREADS} nor {@code OPENBLAS_NUM_THREADS} is in the executor's
 * environment, a task that computes sets the threads to the cores Spark gave it. OpenBLAS has one
 * such setting per JVM, so a worker's cores win over an evaluator's or a scoring task's, which set
 * it only where no worker has.
 */
public final class BlasThreads {
  /** The environment variables that set the threads; either one set leaves the threads as they are. */
  static final String[] ENV = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};

  /** Whether a worker of this JVM has set the threads (an evaluator or scoring task then leaves them). */
  private static boolean setByWorker;

  private BlasThreads() {}

  /** {@link #fit} for the Spark task this thread runs (nothing outside one). */
  public static Optional<String> fitToThisTask(boolean worker) {
    org.apache.spark.TaskContext task = org.apache.spark.TaskContext.get();
    return task == null ? Optional.empty() : fit(task.cpus(), worker);
  }

  /**
   * Fits ND4J's OpenBLAS threads to a task of {@code cores} cores (a worker when {@code worker}); the
   * line to log when it changed them, else empty.
   */
  public static Optional<String> fit(int cores, boolean worker) {
    return fit(cores, worker, System.getenv(), Nd4j.factory().blas());
  }

  static synchronized Optional<String> fit(int cores, boolean worker, Map<String, String> env, Blas blas) {
    for (String name : ENV) {
      String value = env.get(name);
      if (value != null && !value.isBlank()) {
        return Optional.empty();
      }
    }
    if (cores < 1 || (!worker && setByWorker)) {
      return Optional.empty();
    }
    setByWorker |= worker;
    int was = blas.getMaxThreads();
    if (was == cores) {
      return Optional.empty();
    }
    blas.setMaxThreads(cores);
    return Optional.of("ND4J's OpenBLAS now computes with " + cores + (cores == 1 ? " thread" : " threads")
        + ", the task's cores, instead of " + was + " (OMP_NUM_THREADS is not set in this executor's environment; "
        + "set it, e.g. spark.executorEnv.OMP_NUM_THREADS=" + cores + ", to choose yourself)");
  }

  /** For tests: forgets that a worker set the threads. */
  static synchronized void reset() {
    setByWorker = false;
  }
}
