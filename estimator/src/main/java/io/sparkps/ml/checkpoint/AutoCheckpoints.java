package io.sparkps.ml.checkpoint;

import java.io.IOException;
import java.util.UUID;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checkpoints are on by default, as TensorFlow's Estimator saves into its model directory: a fit
 * that names no {@code checkpointDir} saves into a directory of its own that every JVM of the run
 * shares, deleted when the fit ends, whatever its end. The rule, first match wins:
 * <ol>
 *   <li>Spark's checkpoint directory, when set ({@code SparkContext.setCheckpointDir}, on HDFS on a
 *       cluster): {@code <it>/sparkps-checkpoints-<id>};
 *   <li>on YARN, the application's staging directory ({@code spark.yarn.stagingDir}, else the
 *       user's home on the default file system, then {@code .sparkStaging/<application id>}), which
 *       YARN's client deletes with the application;
 *   <li>local mode, or every executor on the driver's host ({@code local-cluster}, one machine):
 *       a directory below {@code java.io.tmpdir};
 *   <li>otherwise (executors on other hosts and a local default file system) none: the run trains
 *       without checkpoints and says so, naming the fix.
 * </ol>
 * {@link #NONE} turns them off; any other value is the user's directory, checked as before and kept.
 */
public final class AutoCheckpoints {
  /** The {@code checkpointDir} that turns checkpoints off. */
  static final String NONE = "none";
  private static final Logger LOG = LoggerFactory.getLogger(AutoCheckpoints.class);

  private AutoCheckpoints() {}

  /** Where a fit checkpoints: {@code dir} null for none; {@code automatic} when the fit owns it (and deletes it). */
  public record Choice(String dir, boolean automatic) {}

  /** The checkpoint directory of a fit whose {@code checkpointDir} is {@code configured} (null: unset). */
  public static Choice choose(SparkContext sc, String configured) {
    if (NONE.equalsIgnoreCase(configured)) {
      return new Choice(null, false);
    }
    if (configured != null) {
      return new Choice(configured, false);
    }
    String name = "sparkps-checkpoints-" + UUID.randomUUID().toString().substring(0, 8);
    String dir = automaticParent(sc);
    if (dir == null) {
      LOG.warn("SparkPS trains without checkpoints: executors run on other hosts than the driver and no directory "
          + "they all share is known. Set checkpointDir (--checkpoint-dir) to an hdfs:// path, or call "
          + "SparkContext.setCheckpointDir, to survive the loss of every copy of a ps's state");
      return new Choice(null, false);
    }
    String chosen = new Path(dir, name).toString();
    LOG.info("SparkPS checkpoints into {} (automatic; deleted when the fit ends; checkpointDir=none turns them off)",
        chosen);
    return new Choice(chosen, true);
  }

  private static String automaticParent(SparkContext sc) {
    if (sc.getCheckpointDir().isDefined()) {
      return sc.getCheckpointDir().get();
    }
    if (sc.master().startsWith("yarn")) {
      try {
        Path base = sc.conf().contains("spark.yarn.stagingDir") ? new Path(sc.conf().get("spark.yarn.stagingDir"))
            : FileSystem.get(sc.hadoopConfiguration()).getHomeDirectory();
        return new Path(new Path(base, ".sparkStaging"), sc.applicationId()).toString();
      } catch (IOException e) {
        LOG.warn("SparkPS: YARN's staging directory cannot be found ({}); trying a local one", e.toString());
      }
    }
    if (sc.isLocal() || sc.master().startsWith("local-cluster") || Checkpoints.executorsOnThisHost(sc)) {
      return new java.io.File(System.getProperty("java.io.tmpdir")).getAbsoluteFile().toURI().toString();
    }
    return null;
  }

  /** Deletes an automatic checkpoint directory (the fit ended); a failure is reported, never thrown. */
  public static void delete(Choice choice) {
    if (!choice.automatic()) {
      return;
    }
    Path dir = new Path(choice.dir());
    try {
      dir.getFileSystem(new org.apache.hadoop.conf.Configuration()).delete(dir, true);
    } catch (IOException | RuntimeException e) {
      LOG.warn("SparkPS: could not delete the automatic checkpoint directory {}: {}", choice.dir(), e.toString());
    }
  }
}
