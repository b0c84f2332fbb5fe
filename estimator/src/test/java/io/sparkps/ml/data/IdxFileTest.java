package io.sparkps.ml.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdxFileTest {
  @TempDir
  Path dir;

  private Path write(String name, boolean gzip, int magic, int[] dims, byte[] data) throws IOException {
    Path p = dir.resolve(name);
    try (OutputStream raw = Files.newOutputStream(p);
         DataOutputStream out = new DataOutputStream(gzip ? new GZIPOutputStream(raw) : raw)) {
      out.writeInt(magic);
      for (int d : dims) {
        out.writeInt(d);
      }
      out.write(data);
    }
    return p;
  }

  @Test
  void read_gzippedUnsignedBytes_givesDimsAndValues() throws IOException {
    Path p = write("img.gz", true, 0x00000803, new int[] {2, 2, 2}, new byte[] {0, 1, (byte) 200, (byte) 255, 4, 5, 6, 7});
    IdxFile f = IdxFile.read(p);
    assertArrayEquals(new int[] {2, 2, 2}, f.dims());
    assertEquals(2, f.items());
    assertEquals(4, f.itemLength());
    assertArrayEquals(new float[] {0, 1, 200, 255, 4, 5, 6, 7}, f.values());
  }

  @Test
  void read_plainFile_works_andBadFilesAreNamed() throws IOException {
    assertEquals(3, IdxFile.read(write("lab", false, 0x00000801, new int[] {3}, new byte[] {1, 2, 3})).items());
    IOException truncated = assertThrows(IOException.class,
        () -> IdxFile.read(write("short", false, 0x00000801, new int[] {5}, new byte[] {1, 2})));
    assertTrue(truncated.getMessage().contains("short is truncated"), truncated.getMessage());
    IOException notIdx = assertThrows(IOException.class,
        () -> IdxFile.read(write("text", false, 0x41424344, new int[] {}, new byte[0])));
    assertTrue(notIdx.getMessage().contains("not an IDX file"), notIdx.getMessage());
  }

  @Test
  void read_fashionMnistTestSet_fromTheDebianPackage() throws IOException {
    Path images = IdxDataFrames.FASHION_MNIST.resolve("t10k-images-idx3-ubyte.gz");
    assertTrue(Files.exists(images), "install Debian's dataset-fashion-mnist (.ci/run does)");
    IdxFile f = IdxFile.read(images);
    assertArrayEquals(new int[] {10000, 28, 28}, f.dims());
    IdxFile labels = IdxFile.read(IdxDataFrames.FASHION_MNIST.resolve("t10k-labels-idx1-ubyte.gz"));
    int[] counts = new int[10];
    for (float v : labels.values()) {
      counts[(int) v]++;
    }
    assertArrayEquals(new int[] {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000}, counts);
  }

  /**
   * Crafted headers: an item of 2^31 - 9 doubles (whose byte count overflows an int), and a gzipped
   * file of a few bytes whose header promises 2^31 - 9 values: both refused with the file named,
   * before anything that large is allocated (the test's heap could not hold either).
   */
  @Test
  void craftedHeaders_areRefusedBeforeAnyAllocation() throws IOException {
    Path wide = write("wide", false, 0x00000E02, new int[] {1, Integer.MAX_VALUE - 9}, new byte[16]);
    IOException tooWide = assertThrows(IOException.class, () -> IdxFile.read(wide));
    assertTrue(tooWide.getMessage().contains("wide: its header [1, 2147483638] declares items of 2147483638 values"),
        tooWide.getMessage());
    IOException ranges = assertThrows(IOException.class, () -> IdxRanges.header(wide.toString()));
    assertTrue(ranges.getMessage().contains("more than one item may hold"), ranges.getMessage());

    Path many = write("many.gz", true, 0x00000801, new int[] {Integer.MAX_VALUE - 9}, new byte[] {1, 2, 3});
    long before = Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
    IOException truncated = assertThrows(IOException.class, () -> IdxFile.read(many));
    assertTrue(truncated.getMessage().contains("many.gz is truncated: its header [2147483638] promises 2147483638"),
        truncated.getMessage());
    long after = Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
    assertTrue(after - before < 1L << 30, "allocated " + ((after - before) >> 20) + " MiB for a file of a few bytes");

    Path plain = write("many", false, 0x00000801, new int[] {Integer.MAX_VALUE - 9}, new byte[] {1, 2, 3});
    IOException early = assertThrows(IOException.class, () -> IdxRanges.header(plain.toString()));
    assertTrue(early.getMessage().contains("many is truncated: its header [2147483638] promises 2147483646 bytes, the "
        + "file has 11"), early.getMessage());
  }
}
