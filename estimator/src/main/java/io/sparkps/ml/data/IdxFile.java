package io.sparkps.ml.data;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;

/**
 * An IDX file (the format of MNIST and Fashion-MNIST), gzipped or not: its dimensions and its
 * values as floats. Supported element types: unsigned and signed byte, short, int, float, double.
 *
 * @param path where it was read from
 * @param dims the dimensions, the first being the number of items
 * @param values the values, item after item
 */
public record IdxFile(Path path, int[] dims, float[] values) {
  /** Reads {@code path}; a malformed file fails naming the file and what is wrong. */
  public static IdxFile read(Path path) throws IOException {
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(path))) {
      raw.mark(2);
      int b0 = raw.read();
      int b1 = raw.read();
      raw.reset();
      InputStream in = b0 == 0x1f && b1 == 0x8b ? new GZIPInputStream(raw, 1 << 16) : raw;
      return parse(path, new DataInputStream(new BufferedInputStream(in, 1 << 16)));
    }
  }

  private static IdxFile parse(Path path, DataInputStream in) throws IOException {
    IdxRanges.Header header = IdxRanges.readHeader(path.toString(), in);
    long count = header.items() * header.itemLength();
    if (count > Integer.MAX_VALUE - 8) {
      throw new IOException(path + ": " + count + " values are too many for one array");
    }
    // Read in blocks of at most 16 Mi values, so that a header promising more than the file holds
    // allocates no more than what the file has, plus one block.
    float[] values = new float[(int) Math.min(count, BLOCK)];
    int read = 0;
    try {
      while (read < count) {
        int n = (int) Math.min(BLOCK, count - read);
        if (values.length < read + n) {
          values = Arrays.copyOf(values, (int) Math.min(count, Math.max((long) read + n, 2L * values.length)));
        }
        readValues(in, header.type(), values, read, n, path);
        read += n;
      }
    } catch (EOFException e) {
      throw new IOException(path + " is truncated: its header " + Arrays.toString(header.dims()) + " promises " + count
          + " values", e);
    }
    return new IdxFile(path, header.dims(), values);
  }

  /** Values read at once (and allocated ahead of what was read). */
  private static final int BLOCK = 1 << 24;

  private static void readValues(DataInputStream in, int type, float[] values, int from, int n, Path path)
      throws IOException {
    float[] block = new float[n];
    readValues(in, type, block, path);
    System.arraycopy(block, 0, values, from, n);
  }

  private static void readValues(DataInputStream in, int type, float[] values, Path path) throws IOException {
    switch (type) {
      case 0x08 -> {
        byte[] bytes = new byte[values.length];
        in.readFully(bytes);
        for (int i = 0; i < bytes.length; i++) {
          values[i] = bytes[i] & 0xff;
        }
      }
      case 0x09 -> {
        for (int i = 0; i < values.length; i++) {
          values[i] = in.readByte();
        }
      }
      case 0x0B -> {
        for (int i = 0; i < values.length; i++) {
          values[i] = in.readShort();
        }
      }
      case 0x0C -> {
        for (int i = 0; i < values.length; i++) {
          values[i] = in.readInt();
        }
      }
      case 0x0D -> {
        for (int i = 0; i < values.length; i++) {
          values[i] = in.readFloat();
        }
      }
      case 0x0E -> {
        for (int i = 0; i < values.length; i++) {
          values[i] = (float) in.readDouble();
        }
      }
      default -> throw new IOException(path + ": unknown IDX element type 0x" + Integer.toHexString(type));
    }
  }

  /** Items (the first dimension). */
  public int items() {
    return dims[0];
  }

  /** Values per item. */
  public int itemLength() {
    return items() == 0 ? 0 : values.length / items();
  }
}
