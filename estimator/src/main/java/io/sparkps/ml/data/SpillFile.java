package io.sparkps.ml.data;

import io.sparkps.spark.SparkPsConf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A worker's spill file in one of its executor's local directories: written at offsets, read or
 * mapped back, deleted on {@link #close}. Its failures name the file or directory and the fix. Not
 * thread-safe: one task writes and reads it.
 */
public final class SpillFile implements AutoCloseable {
  private final Path path;
  private final FileChannel channel;
  private boolean closed;

  private SpillFile(Path path, FileChannel channel) {
    this.path = path;
    this.channel = channel;
  }

  /** A new, empty file named {@code prefix}...{@code suffix} in {@code dir} (made if missing). */
  public static SpillFile create(Path dir, String prefix, String suffix) {
    Path path = null;
    try {
      Files.createDirectories(dir);
      path = Files.createTempFile(dir, prefix, suffix);
      return new SpillFile(path, FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE));
    } catch (IOException e) {
      if (path != null) {
        path.toFile().delete();
      }
      throw new UncheckedIOException("cannot create a spill file in " + dir + " (" + e.getMessage() + "): give the "
          + "executors writable local directories with room for their partitions (spark.local.dir), or raise "
          + SparkPsConf.DATA_IN_MEMORY_MAX.key(), e);
    }
  }

  public Path path() {
    return path;
  }

  /** The open file, to map. */
  FileChannel channel() {
    return channel;
  }

  /** Writes {@code bytes}' remaining bytes at {@code at}. */
  public void write(ByteBuffer bytes, long at) {
    try {
      for (long to = at; bytes.hasRemaining(); ) {
        to += channel.write(bytes, to);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the spill file " + path + " (" + e.getMessage() + "): is its disk "
          + "full? Give the executors local directories with room for their partitions (spark.local.dir)", e);
    }
  }

  /** Reads {@code bytes}' remaining bytes from {@code at}; {@code what} names them in a failure. */
  public void read(ByteBuffer bytes, long at, String what) {
    try {
      for (long from = at; bytes.hasRemaining(); ) {
        int n = channel.read(bytes, from);
        if (n < 0) {
          throw new IOException("the file ends at " + from + " bytes");
        }
        from += n;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + what + " of the spill file " + path + ": " + e.getMessage(), e);
    }
  }

  /** Closes and deletes the file; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      channel.close();
      Files.deleteIfExists(path);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete the spill file " + path + ": " + e.getMessage(), e);
    }
  }
}
