package io.sparkps.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
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

  private RunDirectory(FileSystem fs, Path dir) {
    this.fs = fs;
    this.dir = dir;
  }

  /**
   * The run directory {@code location}, created; one that holds a finished run is refused unless
   * {@code overwrite}.
   */
  static RunDirectory prepare(String location, boolean overwrite, Configuration conf) {
    try {
      Path path = new Path(location);
      FileSystem fs = path.getFileSystem(conf);
      if (fs instanceof org.apache.hadoop.fs.LocalFileSystem local) {
        fs = local.getRaw(); // no .crc files beside the user's files
      }
      Path dir = fs.makeQualified(path);
      if (fs.exists(new Path(dir, "summary.json")) && !overwrite) {
        throw new UsageException("--output " + location + " holds a run already: choose a new directory or add "
            + "--overwrite");
      }
      fs.mkdirs(dir);
      return new RunDirectory(fs, dir);
    } catch (IOException | IllegalArgumentException e) {
      throw new UsageException("--output " + location + ": cannot create it (" + e.getMessage() + ")", e);
    }
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
}
