package io.sparkps.notebook;

import io.sparkps.spark.TrainingJob;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;

/**
 * What Jupyter's interrupt does in this kernel: stop the work a cell started, keep the kernel.
 * Cells run on the shell channel's thread; interrupts arrive on the control channel's.
 */
final class Interrupts {
  private Interrupts() {}

  /**
   * Tags the Spark jobs the cell about to run on this thread starts with a job group of its own
   * ({@code notebook-cell-N}, shown in Spark's UI), whose cancellation interrupts the tasks
   * instead of letting them run to the end of their partition.
   */
  static void beforeCell(int cellNumber, String firstLine) {
    SparkContext sc = activeContext();
    if (sc != null) { // Spark's local properties: they follow this thread and the threads it starts
      sc.setJobGroup("notebook-cell-" + cellNumber, "notebook cell [" + cellNumber + "]: " + firstLine.strip(), true);
    }
  }

  /**
   * Cancels every SparkPS run of this JVM (each ends CANCELLED and stops its ps, evaluator and
   * barrier tasks), interrupts the cell's thread so that a wait in it ({@code join},
   * {@code progress}, a sleep, a Spark action) returns, then cancels every Spark job still running
   * (the tasks of a cell's jobs are interrupted, see {@link #beforeCell}). The thread first: Spark
   * cancels asynchronously, and a cell waiting on an action would otherwise end, at random, with
   * the interrupt or with Spark's "job cancelled".
   */
  static void interrupt(CellRunner cells) {
    for (TrainingJob<?> job : TrainingJob.running()) {
      job.cancel();
    }
    cells.interrupt();
    SparkContext sc = activeContext();
    if (sc != null) {
      sc.cancelAllJobs();
    }
  }

  private static SparkContext activeContext() {
    SparkSession session = SparkSession.getDefaultSession().isDefined() ? SparkSession.getDefaultSession().get()
        : SparkSession.getActiveSession().isDefined() ? SparkSession.getActiveSession().get() : null;
    return session == null || session.sparkContext().isStopped() ? null : session.sparkContext();
  }
}
