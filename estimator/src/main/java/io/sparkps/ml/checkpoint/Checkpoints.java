package io.sparkps.ml.checkpoint;

import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.ShardSnapshot;
import io.sparkps.ps.spec.VariableSpec;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

/**
 * Training checkpoints below a Hadoop file system directory. Each checkpoint goes to a directory
 * of its own, {@code ckpt-<step>}: the ps shards' snapshots (values, optimizer state, versions),
 * then a {@code checkpoint.properties} marker written last (as TensorFlow's {@code checkpoint}
 * file) that names the step, the shard count, the variables and each shard's file with its size
 * and SHA-256. A directory without a marker is a save that did not finish and is never read.
 *
 * <p>Restoring is all or nothing: every shard's file is checked against the marker before any
 * shard is restored; a damaged checkpoint is skipped for the previous complete one, and when none
 * is left the error names each one and why. The newest {@code kept} checkpoints are kept.
 */
public final class Checkpoints {
  public static final String MARKER = "checkpoint.properties";
  private static final String PREFIX = "ckpt-";

  /**
   * What a complete checkpoint's marker says; {@code path} is its directory; {@code gradientAccumulation}
   * the minibatches per step of the run that saved it (1 in markers written before it was recorded).
   */
  public record Marker(String path, long step, int numPs, String variables, String savedAt, List<ShardSnapshot> shards,
      int gradientAccumulation) {}

  /** A restored checkpoint, and the newer ones skipped as damaged (with why). */
  public record Restored(Marker marker, List<String> skipped) {}

  private Checkpoints() {}

  /** The variables' names and shapes, as the marker records them. */
  static String fingerprint(NetworkVariables variables) {
    StringBuilder b = new StringBuilder();
    for (VariableSpec s : variables.specs()) {
      b.append(b.length() == 0 ? "" : ",").append(s.name()).append(Arrays.toString(s.shape()).replace(", ", "x"));
    }
    return b.toString();
  }

  /** The newest complete checkpoint below {@code dir}, if any. */
  public static Optional<Marker> latest(String dir) {
    return complete(dir).stream().findFirst();
  }

  /**
   * The complete checkpoints below {@code dir}, newest first; a marker directly in {@code dir} (the
   * layout before checkpoints had directories of their own, without digests) comes last.
   */
  static List<Marker> complete(String dir) {
    return complete(dir, new ArrayList<>());
  }

  /**
   * As {@link #complete(String)}; a checkpoint whose marker cannot be read is left out, with why
   * added to {@code unreadable} (one damaged marker must not block every restore).
   */
  static List<Marker> complete(String dir, List<String> unreadable) {
    Path root = new Path(dir);
    List<Marker> markers = new ArrayList<>();
    try {
      FileSystem fs = root.getFileSystem(new Configuration());
      if (!fs.exists(root)) {
        return markers;
      }
      for (FileStatus f : fs.listStatus(root)) {
        if (isCheckpoint(f) && fs.exists(new Path(f.getPath(), MARKER))) {
          try {
            markers.add(read(fs, f.getPath()));
          } catch (IllegalStateException e) {
            unreadable.add(f.getPath().getName() + ": " + e.getMessage());
          }
        }
      }
      markers.sort(Comparator.comparingLong(Marker::step).reversed());
      if (fs.exists(new Path(root, MARKER))) {
        try {
          markers.add(read(fs, root));
        } catch (IllegalStateException e) {
          unreadable.add(MARKER + ": " + e.getMessage());
        }
      }
      return markers;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the checkpoints in " + dir + ": " + e.getMessage(), e);
    }
  }

  /** Whether {@code f} is a directory SparkPS made for a checkpoint: {@code ckpt-} and digits, nothing else. */
  private static boolean isCheckpoint(FileStatus f) {
    return f.isDirectory() && CHECKPOINT_NAME.matcher(f.getPath().getName()).matches();
  }

  private static final java.util.regex.Pattern CHECKPOINT_NAME = java.util.regex.Pattern.compile(PREFIX + "\\d{1,19}");

  private static Marker read(FileSystem fs, Path checkpoint) {
    Path marker = new Path(checkpoint, MARKER);
    try {
      Properties p = new Properties();
      try (InputStream in = fs.open(marker)) {
        p.load(in);
      }
      int numPs = Integer.parseInt(p.getProperty("numPs"));
      List<ShardSnapshot> shards = new ArrayList<>();
      for (int i = 0; i < numPs && p.getProperty("shard." + i + ".file") != null; i++) {
        List<String> needs = new ArrayList<>();
        for (int k = 0; p.getProperty("shard." + i + ".needs." + k) != null; k++) {
          needs.add(p.getProperty("shard." + i + ".needs." + k));
        }
        shards.add(new ShardSnapshot(i, p.getProperty("shard." + i + ".file"),
            Long.parseLong(p.getProperty("shard." + i + ".bytes")), p.getProperty("shard." + i + ".sha256"), needs));
      }
      return new Marker(checkpoint.toString(), Long.parseLong(p.getProperty("step")), numPs,
          p.getProperty("variables"), p.getProperty("savedAt"), shards,
          Integer.parseInt(p.getProperty("gradientAccumulation", "1")));
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("cannot read the checkpoint marker " + marker + ": " + e.getMessage()
          + " (delete " + checkpoint + " to go on without it)", e);
    }
  }

  /**
   * Saves the servers' state as the checkpoint of {@code step} (its shard files, then its marker),
   * then deletes all but the newest {@code kept} complete checkpoints and any unfinished save
   * older than the newest. A complete checkpoint of the same step is kept as it is.
   */
  public static Marker save(PsClient ps, String dir, long step, NetworkVariables variables, int kept,
      int gradientAccumulation) {
    Path checkpoint = new Path(dir, String.format("%s%010d", PREFIX, step));
    Configuration conf = new Configuration();
    try {
      FileSystem fs = checkpoint.getFileSystem(conf);
      if (fs.exists(new Path(checkpoint, MARKER))) {
        return read(fs, checkpoint);
      }
      fs.delete(checkpoint, true); // an unfinished save of this step
      List<ShardSnapshot> shards = ps.save(checkpoint.toString());
      Properties p = new Properties();
      p.setProperty("step", Long.toString(step));
      p.setProperty("numPs", Integer.toString(ps.numShards()));
      p.setProperty("variables", fingerprint(variables));
      p.setProperty("gradientAccumulation", Integer.toString(gradientAccumulation));
      p.setProperty("savedAt", Instant.now().toString());
      for (ShardSnapshot s : shards) {
        p.setProperty("shard." + s.shard() + ".file", s.file());
        p.setProperty("shard." + s.shard() + ".bytes", Long.toString(s.bytes()));
        p.setProperty("shard." + s.shard() + ".sha256", s.sha256());
        for (int k = 0; k < s.tablesNeeds().size(); k++) {
          p.setProperty("shard." + s.shard() + ".needs." + k, s.tablesNeeds().get(k));
        }
      }
      Path tmp = new Path(checkpoint, "." + MARKER + ".tmp-" + UUID.randomUUID());
      try (OutputStream out = fs.create(tmp, false)) {
        p.store(out, "SparkPS checkpoint: the shard files below are complete and have these sizes and digests");
      }
      FileContext.getFileContext(checkpoint.toUri(), conf).rename(tmp, new Path(checkpoint, MARKER),
          Options.Rename.OVERWRITE);
      prune(fs, dir, kept);
      return read(fs, checkpoint);
    } catch (IOException e) {
      throw new UncheckedIOException("could not save the checkpoint of step " + step + " in " + checkpoint, e);
    }
  }

  /**
   * Deletes the complete checkpoints older than the newest {@code kept}, and the unfinished saves
   * older than the newest, except the saves a kept checkpoint's embedding tables build on (a delta
   * needs its chain back to its full save, which may be an older checkpoint or even a save another
   * ps did not finish).
   */
  private static void prune(FileSystem fs, String dir, int kept) throws IOException {
    List<Marker> complete = complete(dir);
    long newest = complete.isEmpty() ? Long.MIN_VALUE : complete.get(0).step();
    java.util.Set<String> needed = new java.util.HashSet<>();
    for (Marker m : complete.subList(0, Math.min(kept, complete.size()))) {
      for (ShardSnapshot s : m.shards()) {
        s.tablesNeeds().forEach(n -> needed.add(new Path(n).getName()));
      }
    }
    for (Marker old : complete.subList(Math.min(kept, complete.size()), complete.size())) {
      Path path = new Path(old.path());
      if (!path.equals(new Path(dir)) && !needed.contains(path.getName())) {
        fs.delete(path, true);
      }
    }
    for (FileStatus f : fs.listStatus(new Path(dir))) {
      String name = f.getPath().getName();
      // Only directories named as SparkPS names them (ckpt-<step>): a user's ckpt-old or ckpt-keep is not ours.
      if (isCheckpoint(f) && !fs.exists(new Path(f.getPath(), MARKER)) && !needed.contains(name)
          && new java.math.BigInteger(name.substring(PREFIX.length())).compareTo(java.math.BigInteger.valueOf(newest)) < 0) {
        fs.delete(f.getPath(), true);
      }
    }
  }

  /**
   * Restores the newest checkpoint below {@code dir} whose every shard file matches its marker
   * (checked on all shards before any is restored), after checking it fits this run; empty when
   * there is none. Throws, naming each one, when checkpoints exist and all are damaged.
   */
  public static Optional<Restored> restore(PsClient ps, String dir, NetworkVariables variables,
      int gradientAccumulation) {
    List<String> skipped = new ArrayList<>();
    List<Marker> markers = complete(dir, skipped);
    for (Marker m : markers) {
      checkFits(dir, m, variables, ps.numShards(), gradientAccumulation);
      try {
        ps.restore(m.path(), m.shards(), true);
      } catch (io.sparkps.ps.spec.PsUnavailableException | io.sparkps.ps.spec.PsTimeoutException notAnswered) {
        throw notAnswered; // a ps that did not answer says nothing of the checkpoint: never roll back further for it
      } catch (RuntimeException damaged) {
        skipped.add("step " + m.step() + ": " + damaged.getMessage());
        continue;
      }
      ps.restore(m.path(), m.shards(), false);
      return Optional.of(new Restored(m, skipped));
    }
    if (!skipped.isEmpty()) {
      throw new IllegalStateException("no checkpoint in " + dir + " can be restored, each is damaged: " + skipped
          + ". Delete the damaged ones to start from the newest one left, or use a new checkpointDir");
    }
    return Optional.empty();
  }

  /**
   * Refuses, before launch, a checkpoint directory that the run's JVMs would not see as one: a
   * relative path (each executor resolves it against its own working directory) when the run
   * spans JVMs, and a local file system path when executors run on other hosts than the driver
   * (each host would hold part of a checkpoint), unless {@link io.sparkps.spark.SparkPsConf#CHECKPOINT_SHARED_FILE_SYSTEM} says it is shared.
   */
  public static void checkShared(org.apache.spark.SparkContext sc, String dir) {
    if (sc.isLocal()) {
      return; // one JVM
    }
    java.net.URI uri = new Path(dir).toUri();
    if (uri.getScheme() == null && !new Path(dir).isAbsolute()) {
      throw new IllegalArgumentException("checkpointDir '" + dir + "' is relative: each executor would resolve it "
          + "against its own working directory. Give an absolute path on a file system the driver and every executor "
          + "reach, e.g. hdfs:///user/me/ckpt");
    }
    String scheme = uri.getScheme() != null ? uri.getScheme()
        : FileSystem.getDefaultUri(sc.hadoopConfiguration()).getScheme();
    if (!"file".equals(scheme) || io.sparkps.spark.SparkPsConf.CHECKPOINT_SHARED_FILE_SYSTEM.get(sc.getConf())) {
      return;
    }
    java.util.Set<String> elsewhere = hostsElsewhere(sc);
    if (!elsewhere.isEmpty()) {
      throw new IllegalArgumentException("checkpointDir '" + dir + "' is on the local file system, and executors run on "
          + "other hosts than the driver " + elsewhere + ": each host would hold part of a checkpoint. "
          + "Use a file system they all reach (hdfs://...), or, if the path is a mount every host shares, set "
          + io.sparkps.spark.SparkPsConf.CHECKPOINT_SHARED_FILE_SYSTEM.key() + "=true");
    }
  }

  /** The hosts of executors that run on other machines than the driver's. */
  private static java.util.Set<String> hostsElsewhere(org.apache.spark.SparkContext sc) {
    java.util.Set<String> elsewhere = new java.util.TreeSet<>();
    for (org.apache.spark.SparkExecutorInfo e : sc.statusTracker().getExecutorInfos()) {
      if (!isThisMachine(e.host())) {
        elsewhere.add(e.host());
      }
    }
    return elsewhere;
  }

  /** Whether every executor runs on the driver's machine. */
  static boolean executorsOnThisHost(org.apache.spark.SparkContext sc) {
    return hostsElsewhere(sc).isEmpty();
  }

  /** Whether {@code host} names this machine (the driver's): a loopback address or one of its interfaces. */
  private static boolean isThisMachine(String host) {
    try {
      java.net.InetAddress address = java.net.InetAddress.getByName(host);
      return address.isLoopbackAddress() || address.isAnyLocalAddress()
          || java.net.NetworkInterface.getByInetAddress(address) != null;
    } catch (java.io.IOException e) {
      return false; // a host that does not resolve here is not this machine
    }
  }

  /**
   * Fails, naming the difference, when the checkpoint was not made by this network on {@code numPs}
   * ps with {@code gradientAccumulation} minibatches per step (the servers count steps: with another
   * number, the run would continue at another minibatch).
   */
  public static void checkFits(String dir, Marker marker, NetworkVariables variables, int numPs,
      int gradientAccumulation) {
    if (marker.numPs() != numPs) {
      throw new IllegalArgumentException("the checkpoint in " + dir + " was saved with " + marker.numPs() + " ps but this "
          + "run has " + numPs + ": run with numPs " + marker.numPs() + " or use a new checkpoint directory");
    }
    if (!fingerprint(variables).equals(marker.variables())) {
      throw new IllegalArgumentException("the checkpoint in " + dir + " holds other variables (" + marker.variables()
          + ") than this network's (" + fingerprint(variables) + "): use a new checkpoint directory for a new network");
    }
    if (marker.gradientAccumulation() != gradientAccumulation) {
      throw new IllegalArgumentException("the checkpoint in " + dir + " was saved with gradientAccumulation "
          + marker.gradientAccumulation() + " (minibatches per step) but this run has " + gradientAccumulation
          + ": resume with gradientAccumulation " + marker.gradientAccumulation() + " or use a new checkpoint directory");
    }
  }
}
