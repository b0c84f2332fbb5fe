package io.sparkps.ml;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.VariableSpec;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

/**
 * Training checkpoints in a Hadoop file system directory: the ps shards' snapshots (values,
 * optimizer state, versions) and a {@code checkpoint.properties} marker written after them (as
 * TensorFlow's {@code checkpoint} file), naming the step, the shard count and the variables. A run
 * that finds a marker resumes from it instead of initializing; a marker of another network or
 * shard count is refused with the reason.
 */
final class Checkpoints {
  static final String MARKER = "checkpoint.properties";

  /** What the marker says. */
  record Marker(long step, int numPs, String variables, String savedAt) {}

  private Checkpoints() {}

  /** The variables' names and shapes, as the marker records them. */
  static String fingerprint(NetworkVariables variables) {
    StringBuilder b = new StringBuilder();
    for (VariableSpec s : variables.specs()) {
      b.append(b.length() == 0 ? "" : ",").append(s.name()).append(Arrays.toString(s.shape()).replace(", ", "x"));
    }
    return b.toString();
  }

  /** The marker below {@code dir}, if a checkpoint was completed there. */
  static Optional<Marker> latest(String dir) {
    Path marker = new Path(dir, MARKER);
    try {
      FileSystem fs = marker.getFileSystem(new Configuration());
      if (!fs.exists(marker)) {
        return Optional.empty();
      }
      Properties p = new Properties();
      try (InputStream in = fs.open(marker)) {
        p.load(in);
      }
      return Optional.of(new Marker(Long.parseLong(p.getProperty("step")), Integer.parseInt(p.getProperty("numPs")),
          p.getProperty("variables"), p.getProperty("savedAt")));
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("cannot read the checkpoint marker " + marker + ": " + e.getMessage()
          + " (delete the directory to start afresh)", e);
    }
  }

  /** Saves the servers' state below {@code dir}, then the marker (so a marker names a complete checkpoint). */
  static void save(PsClient ps, String dir, long step, NetworkVariables variables) {
    ps.save(dir);
    Path marker = new Path(dir, MARKER);
    Configuration conf = new Configuration();
    try {
      FileSystem fs = marker.getFileSystem(conf);
      Path tmp = new Path(dir, "." + MARKER + ".tmp-" + UUID.randomUUID());
      Properties p = new Properties();
      p.setProperty("step", Long.toString(step));
      p.setProperty("numPs", Integer.toString(ps.numShards()));
      p.setProperty("variables", fingerprint(variables));
      p.setProperty("savedAt", Instant.now().toString());
      try (OutputStream out = fs.create(tmp, false)) {
        p.store(out, "SparkPS checkpoint: the ps-*.snapshot files beside this one are complete");
      }
      FileContext.getFileContext(marker.toUri(), conf).rename(tmp, marker, Options.Rename.OVERWRITE);
    } catch (IOException e) {
      throw new UncheckedIOException("could not write the checkpoint marker " + marker, e);
    }
  }

  /** Restores the checkpoint of {@code marker} into the servers, after checking it fits this run. */
  static void restore(PsClient ps, String dir, Marker marker, NetworkVariables variables) {
    checkFits(dir, marker, variables, ps.numShards());
    ps.restore(dir);
  }

  /** Fails, naming the difference, when the checkpoint was not made by this network on {@code numPs} ps. */
  static void checkFits(String dir, Marker marker, NetworkVariables variables, int numPs) {
    if (marker.numPs() != numPs) {
      throw new IllegalArgumentException("the checkpoint in " + dir + " was saved with " + marker.numPs() + " ps but this "
          + "run has " + numPs + ": run with numPs " + marker.numPs() + " or use a new checkpoint directory");
    }
    if (!fingerprint(variables).equals(marker.variables())) {
      throw new IllegalArgumentException("the checkpoint in " + dir + " holds other variables (" + marker.variables()
          + ") than this network's (" + fingerprint(variables) + "): use a new checkpoint directory for a new network");
    }
  }
}
