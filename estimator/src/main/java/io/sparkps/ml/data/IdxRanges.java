package io.sparkps.ml.data;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.Serializable;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Reading an IDX file by item ranges where it lies (any Hadoop file system: a local path present
 * on every node, HDFS, ...), gzipped or not: its header in the driver, each range of items in the
 * task that needs it, item by item, so no task carries data and no JVM holds the whole file.
 */
final class IdxRanges {
  private IdxRanges() {}

  /**
   * The header of an IDX file: where it is, its element type, its dimensions (the first being the
   * number of items) and how many bytes it occupies before its values.
   */
  record Header(String path, int type, int[] dims) implements Serializable {
    long items() {
      return dims[0];
    }

    int itemLength() {
      long n = 1;
      for (int i = 1; i < dims.length; i++) {
        n *= dims[i];
      }
      return (int) n;
    }

    int elementBytes() {
      return switch (type) {
        case 0x08, 0x09 -> 1;
        case 0x0B -> 2;
        case 0x0C, 0x0D -> 4;
        default -> 8;
      };
    }

    long headerBytes() {
      return 4L + 4L * dims.length;
    }

    /** The bytes the header promises in all (checked not to overflow when the header was read). */
    long totalBytes() {
      return headerBytes() + items() * itemLength() * elementBytes();
    }
  }

  /** Opens {@code path} (decompressing it when it is gzipped) as the bytes of the IDX file. */
  static DataInputStream open(String path) throws IOException {
    Path p = new Path(path);
    FileSystem fs = p.getFileSystem(new Configuration());
    InputStream raw = new BufferedInputStream(fs.open(p), 1 << 16);
    raw.mark(2);
    int b0 = raw.read();
    int b1 = raw.read();
    raw.reset();
    InputStream in = b0 == 0x1f && b1 == 0x8b ? new BufferedInputStream(new GZIPInputStream(raw, 1 << 16), 1 << 16) : raw;
    return new DataInputStream(in);
  }

  /** The header of {@code path}; a malformed one fails naming the file and what is wrong. */
  static Header header(String path) throws IOException {
    Header header;
    try (DataInputStream in = open(path)) {
      header = readHeader(path, in);
    }
    // An uncompressed file's length is known: a header that promises more is refused here, before
    // any task allocates or reads for it. (A gzipped one is checked as it is read.)
    Path p = new Path(path);
    FileSystem fs = p.getFileSystem(new Configuration());
    long length = fs.getFileStatus(p).getLen();
    boolean gzipped;
    try (InputStream raw = fs.open(p)) {
      gzipped = raw.read() == 0x1f && raw.read() == 0x8b;
    }
    if (!gzipped && length < header.totalBytes()) {
      throw new IOException(path + " is truncated: its header " + Arrays.toString(header.dims()) + " promises "
          + header.totalBytes() + " bytes, the file has " + length);
    }
    return header;
  }

  /** Reads the header at the start of {@code in}, the bytes of the IDX file at {@code path}. */
  static Header readHeader(String path, DataInputStream in) throws IOException {
    int magic;
    try {
      magic = in.readInt();
    } catch (EOFException e) {
      throw new IOException(path + " is empty: not an IDX file", e);
    }
    int type = (magic >>> 8) & 0xff;
    int rank = magic & 0xff;
    if ((magic >>> 16) != 0 || rank < 1 || rank > 8) {
      throw new IOException(path + " is not an IDX file (magic 0x" + Integer.toHexString(magic) + ")");
    }
    if (!Arrays.asList(0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E).contains(type)) {
      throw new IOException(path + ": unknown IDX element type 0x" + Integer.toHexString(type));
    }
    int[] dims = new int[rank];
    long itemLength = 1;
    for (int i = 0; i < rank; i++) {
      dims[i] = in.readInt();
      if (dims[i] < 0) {
        throw new IOException(path + ": dimension " + i + " is negative (" + dims[i] + ")");
      }
      if (i > 0) {
        itemLength *= dims[i];
      }
    }
    Header header = new Header(path, type, dims);
    // Sizes are checked before anything of that size is allocated: an item must fit one array of
    // bytes, and the whole file's size must be a long.
    long itemBytes = itemLength * header.elementBytes();
    if (itemLength > Integer.MAX_VALUE - 8 || itemBytes > Integer.MAX_VALUE - 8) {
      throw new IOException(path + ": its header " + Arrays.toString(dims) + " declares items of " + itemLength
          + " values (" + itemBytes + " bytes), more than one item may hold (" + (Integer.MAX_VALUE - 8) + " bytes)");
    }
    try {
      Math.addExact(header.headerBytes(), Math.multiplyExact((long) dims[0], itemBytes));
    } catch (ArithmeticException e) {
      throw new IOException(path + ": its header " + Arrays.toString(dims) + " declares more bytes than any file holds",
          e);
    }
    return header;
  }

  /** Reads items one at a time from {@code first} on, each as floats (times {@code scale}). */
  static final class Reader implements AutoCloseable {
    private final Header header;
    private final DataInputStream in;
    private final byte[] raw;
    private long next;

    Reader(Header header, long first) throws IOException {
      this.header = header;
      this.in = open(header.path());
      this.raw = new byte[header.itemLength() * header.elementBytes()];
      skip(header.headerBytes() + first * raw.length, first);
      this.next = first;
    }

    private void skip(long bytes, long first) throws IOException {
      long left = bytes;
      while (left > 0) {
        long n = in.skip(left);
        if (n <= 0) {
          if (in.read() < 0) {
            throw new IOException(header.path() + " is truncated: it ends before item " + first + " of "
                + header.items());
          }
          n = 1;
        }
        left -= n;
      }
    }

    /** Item {@code next} into {@code dst} (its length values), multiplied by {@code scale}. */
    void read(double[] dst, double scale) throws IOException {
      try {
        in.readFully(raw);
      } catch (EOFException e) {
        throw new IOException(header.path() + " is truncated: its header " + Arrays.toString(header.dims())
            + " promises " + header.items() + " items, it ends in item " + next, e);
      }
      java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(raw);
      for (int i = 0; i < dst.length; i++) {
        double v = switch (header.type()) {
          case 0x08 -> raw[i] & 0xff;
          case 0x09 -> raw[i];
          case 0x0B -> b.getShort(2 * i);
          case 0x0C -> b.getInt(4 * i);
          case 0x0D -> b.getFloat(4 * i);
          default -> b.getDouble(8 * i);
        };
        dst[i] = v * scale;
      }
      next++;
    }

    @Override
    public void close() throws IOException {
      in.close();
    }
  }
}
