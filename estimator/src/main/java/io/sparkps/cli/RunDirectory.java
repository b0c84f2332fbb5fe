package io.sparkps.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A run directory on any Hadoop file system: a local path (relative paths resolve against the
 * working directory), or a URI such as {@code hdfs:///runs/fmnist}, so a driver in a YARN
 * container writes where the user can read.
 */
final class RunDirectory {
  private final FileSystem fs;
  private final Path dir;
  private final boolean continuing;

  private RunDirectory(FileSystem fs, Path dir, boolean continuing) {
    this.fs = fs;
    this.dir = dir;
    this.continuing = continuing;
  }

  /**
   * The run directory {@code location}, created. An existing directory that holds anything is
   * refused unless {@code overwrite}; with it, the files a run writes are replaced and every other
   * file is left as it is. A file at {@code location} is refused.
   */
  static RunDirectory prepare(String location, boolean overwrite, Configuration conf) {
    return prepare(location, overwrite, conf, null);
  }

  /**
   * As above, for the run of Spark application {@code appId} (null: none known). A directory this
   * same application began (a second attempt of it on YARN, after its first driver died) is its
   * own to go on writing; the application is recorded in {@value #OWNER}.
   */
  static RunDirectory prepare(String location, boolean overwrite, Configuration conf, String appId) {
    return check(location, overwrite, conf, appId).create();
  }

  /**
   * The run's own checkpoint directory, {@code checkpoints/} in it, when every executor reaches it
   * (a shared file system, or a local one with the executors on this machine); else null. A run
   * that replaces another's files (--overwrite) empties it first, so as not to resume from that
   * run; a second attempt of the same application (its driver restarted) resumes from it.
   */
  String checkpoints(org.apache.spark.SparkContext sc) throws IOException {
    boolean reached = !"file".equals(dir.toUri().getScheme()) || sc.isLocal() || sc.master().startsWith("local-cluster");
    if (!reached) {
      return null;
    }
    Path checkpoints = new Path(dir, "checkpoints");
    if (!continuing) {
      fs.delete(checkpoints, true);
    }
    return checkpoints.toString();
  }

  /**
   * A run directory checked as {@link #prepare} does, not yet created: {@link #create()} makes it;
   * {@code continuing}: it holds this same application's run, which goes on there.
   */
  record Checked(FileSystem fs, Path dir, String location, String appId, boolean continuing) {
    RunDirectory create() {
      try {
        fs.mkdirs(dir);
      } catch (IOException e) {
        throw new UsageException("--output " + location + ": cannot create it (" + e.getMessage() + ")", e);
      }
      RunDirectory run = new RunDirectory(fs, dir, continuing);
      if (appId != null) {
        run.write(OWNER, appId + "\n");
      }
      return run;
    }
  }

  /**
   * Checks {@code location} as {@link #prepare} does, and creates nothing: a command refuses a
   * taken directory before anything else, and leaves none behind when its other arguments fail.
   */
  static Checked check(String location, boolean overwrite, Configuration conf, String appId) {
    try {
      Path path = new Path(location);
      FileSystem fs = path.getFileSystem(conf);
      if (fs instanceof org.apache.hadoop.fs.LocalFileSystem local) {
        fs = local.getRaw(); // no .crc files beside the user's files
      }
      Path dir = fs.makeQualified(path);
      List<String> held = held(fs, dir, location);
      boolean ours = appId != null && held.contains(OWNER) && appId.equals(readOwner(fs, new Path(dir, OWNER)));
      if (!held.isEmpty() && !overwrite && !ours) {
        throw new UsageException("--output " + location + " is not empty (it holds " + describe(held) + "): choose "
            + "a new directory, or add --overwrite to replace the files a run writes there (" + String.join(", ",
                WRITTEN) + ") and keep the others");
      }
      return new Checked(fs, dir, location, appId, ours);
    } catch (IOException | IllegalArgumentException e) {
      throw new UsageException("--output " + location + ": cannot create it (" + e.getMessage() + ")", e);
    }
  }

  /** The file naming the Spark application whose run the directory holds. */
  static final String OWNER = ".sparkps-run";

  private static String readOwner(FileSystem fs, Path file) throws IOException {
    if (fs.getFileStatus(file).getLen() > 1024) {
      return null; // not ours: we write an application id
    }
    try (java.io.InputStream in = fs.open(file)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    }
  }

  /** What a run writes into its directory (with {@code --overwrite}, only these are replaced). */
  static final List<String> WRITTEN = List.of("metrics.jsonl", "summary.json", "report.html", "model/",
      "model.dl4j.zip", "checkpoints/", OWNER);

  /**
   * The first free one of {@code base}, {@code base-2}, {@code base-3}, ...: where a command whose
   * output the user did not name writes, so that running it again keeps the earlier run.
   */
  static String firstFree(String base, Configuration conf) {
    for (int n = 1; n <= 1000; n++) {
      String candidate = n == 1 ? base : base + "-" + n;
      try {
        Path path = new Path(candidate);
        if (!path.getFileSystem(conf).exists(path)) {
          return candidate;
        }
      } catch (IOException e) {
        throw new UsageException("--output " + candidate + ": cannot look at it (" + e.getMessage() + ")", e);
      }
    }
    throw new UsageException("--output: " + base + " and " + base + "-2 ... " + base + "-1000 all exist: name a new "
        + "run directory with --output");
  }

  /** The names inside directory {@code dir} (empty when it does not exist); a file there is refused. */
  static List<String> held(FileSystem fs, Path dir, String location) throws IOException {
    if (!fs.exists(dir)) {
      return List.of();
    }
    if (!fs.getFileStatus(dir).isDirectory()) {
      throw new UsageException("--output " + location + " is a file, not a directory: name a directory");
    }
    List<String> names = new ArrayList<>();
    for (FileStatus f : fs.listStatus(dir)) {
      names.add(f.getPath().getName() + (f.isDirectory() ? "/" : ""));
    }
    names.sort(null);
    return names;
  }

  /** At most five of {@code names}, and how many more. */
  static String describe(List<String> names) {
    return String.join(", ", names.subList(0, Math.min(5, names.size())))
        + (names.size() > 5 ? " and " + (names.size() - 5) + " more" : "");
  }

  /** The URI of {@code name} inside (for Spark's writers). */
  String uri(String name) {
    return new Path(dir, name).toUri().toString();
  }

  /** A new file {@code name} (replaced if there). */
  FSDataOutputStream create(String name) throws IOException {
    return fs.create(new Path(dir, name), true);
  }

  /** Writes {@code text} to {@code name}. */
  void write(String name, String text) {
    try (OutputStream out = create(name)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + uri(name), e);
    }
  }

  @Override
  public String toString() {
    return "file".equals(dir.toUri().getScheme()) ? dir.toUri().getPath() : dir.toString();
  }

  /**
   * Refuses an existing non-empty dataset {@code --output} unless {@code overwrite}, and then unless
   * it holds only a dataset Spark wrote (part files, {@code _SUCCESS} and the like): Spark's overwrite
   * deletes the whole directory, which must never take a user's other files with it.
   */
  static void checkDatasetOutput(org.apache.spark.sql.SparkSession spark, String output, boolean overwrite,
      String what) throws java.io.IOException {
    org.apache.hadoop.fs.Path dir = new org.apache.hadoop.fs.Path(output);
    org.apache.hadoop.fs.FileSystem fs = dir.getFileSystem(spark.sparkContext().hadoopConfiguration());
    java.util.List<String> held = held(fs, dir, output);
    if (held.isEmpty()) {
      return;
    }
    if (!overwrite) {
      throw new UsageException("--output " + output + " is not empty (it holds " + describe(held)
          + "): choose a new directory, or add --overwrite to replace " + what);
    }
    java.util.List<String> foreign = held.stream().filter(n -> !isSparkOutput(n)).toList();
    if (!foreign.isEmpty()) {
      throw new UsageException("--output " + output + " holds files that are not a dataset Spark wrote ("
          + describe(foreign) + "), which --overwrite would delete with it: choose a new directory");
    }
  }

  private static boolean isSparkOutput(String name) {
    return name.startsWith("part-") || name.startsWith("_") || name.startsWith(".") && name.endsWith(".crc");
  }
}
