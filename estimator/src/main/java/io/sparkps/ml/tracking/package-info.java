/**
 * Where a run is reported beyond SparkPS's own record: MLflow tracking ({@link
 * io.sparkps.ml.tracking.MlflowTracking}), fed by the run's progress on the driver.
 */
package io.sparkps.ml.tracking;
