/**
 * What a run does when one of its roles fails, in one vocabulary: a ps is <em>lost</em> (its task
 * ended, a worker could not reach it, or it was silent), <em>relaunched</em> and <em>refilled</em>
 * by a worker's copy or a checkpoint, and the run reports each such <em>recovery</em>
 * ({@link io.sparkps.spark.recovery.PsRecovery}, public); a worker's failure is <em>transient</em>
 * (another stage attempt may get past it) or <em>deterministic</em> ({@link
 * io.sparkps.spark.recovery.Failures}).
 *
 * <p>Internal but for {@code PsRecovery}: the driver's {@link io.sparkps.spark.recovery.Supervisor}
 * decides, on the coordinator's registry and clock, and the run's Spark jobs carry its decisions
 * out ({@link io.sparkps.spark.recovery.Supervisor.Actions}); a task's {@link
 * io.sparkps.spark.recovery.CoordinatorRecovery} asks the coordinator where a lost ps serves now and
 * reports refills. The package sits between {@code io.sparkps.spark} and its coordinator: it uses
 * {@code io.sparkps.spark.coord} and never the package above it.
 */
package io.sparkps.spark.recovery;
