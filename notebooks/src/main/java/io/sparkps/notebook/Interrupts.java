package io.sparkps.notebook;

import io.sparkps.spark.TrainingJob;
import org.apache.spark.sql.SparkSession;

/**
 * What Jupyter's interrupt does in this kernel: stop the work a cell started, keep the kernel.
 * Runs on the control channel's thread while the cell runs on the shell's.
 */
final class Interrupts {
  private Interrupts() {}

  /**
   * Cancels every SparkPS run of this JVM (each ends CANCELLED and stops its ps, evaluator and
   * barrier tasks), then the Spark jobs still running (a plain {@code count()}), then interrupts
   * the cell's thread so that a wait in it ({@code join}, {@code progress}, a sleep) returns.
   */
  static void interrupt(CellRunner cells) {
    for (TrainingJob<?> job : TrainingJob.running()) {
      job.cancel();
    }
    SparkSession session = SparkSession.getDefaultSession().isDefined() ? SparkSession.getDefaultSession().get()
        : SparkSession.getActiveSession().isDefined() ? SparkSession.getActiveSession().get() : null;
    if (session != null && !session.sparkContext().isStopped()) {
      session.sparkContext().cancelAllJobs();
    }
    cells.interrupt();
  }
}
