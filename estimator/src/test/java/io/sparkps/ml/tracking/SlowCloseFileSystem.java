package io.sparkps.ml.tracking;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local file system under the scheme {@code slowclose:}, whose files take {@link #CLOSE_MILLIS} to
 * close: what holds a writer's last records back from its readers (set {@code fs.slowclose.impl} to
 * this class).
 */
public final class SlowCloseFileSystem extends RawLocalFileSystem {
  /** How long closing a file takes. */
  public static final long CLOSE_MILLIS = 8000;

  @Override
  public URI getUri() {
    return URI.create("slowclose:///");
  }

  @Override
  public String getScheme() {
    return "slowclose";
  }

  @Override
  public FSDataOutputStream create(Path f, boolean overwrite, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    return slow(super.create(f, overwrite, bufferSize, replication, blockSize, progress));
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    return slow(super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress));
  }

  private FSDataOutputStream slow(FSDataOutputStream local) throws IOException {
    OutputStream slow = new FilterOutputStream(local) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
      }

      @Override
      public void close() throws IOException {
        try {
          Thread.sleep(CLOSE_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        super.close();
      }
    };
    return new FSDataOutputStream(slow, statistics);
  }
}
