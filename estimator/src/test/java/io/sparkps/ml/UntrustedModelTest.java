package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.Net;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model files from elsewhere: a network JSON that declares more parameters than a heap holds is
 * refused before the network is built, and a saved model whose network declares another number
 * of parameters than its file holds is refused as damaged, naming the file.
 */
class UntrustedModelTest {
  private static SparkSession spark;
  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(1, "untrusted-models");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  /** The fixture model's network JSON (5-8-3), with its first layer widened to {@code nOut}. */
  private static String widened(String json, long nOut) {
    return json.replace("\"nout\" : 8", "\"nout\" : " + nOut).replace("\"nin\" : 8", "\"nin\" : " + nOut);
  }

  private static Path copyOfFixture(Path to) throws IOException {
    Path from = Path.of("src/test/resources/saved-models/spark-3.5.9/model");
    try (var all = Files.walk(from)) {
      for (Path p : all.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
    return to;
  }

  @Test
  void aNetworkDeclaringBillionsOfParameters_isRefusedBeforeItIsBuilt() throws IOException {
    Path model = copyOfFixture(dir.resolve("fixture"));
    String json;
    try (DataInputStream in = new DataInputStream(Files.newInputStream(model.resolve("data/network.bin")))) {
      json = new String(in.readNBytes(in.readInt()), StandardCharsets.UTF_8);
    }
    assertEquals(5 * 8 + 8 + 8 * 3 + 3, Net.declaredParams(json));
    // 5-N-3 declares 9N + 3 parameters: N = 3e9 overflows one array; N = 1e8 fits one, not the test's 4 GB heap.
    String huge = widened(json, 3_000_000_000L);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Net.fromJson(huge));
    assertTrue(e.getMessage().contains("the network declares 27000000003 parameters, more than the 2147483639 one "
        + "array holds"), e.getMessage());
    String large = widened(json, 100_000_000L); // 900,000,003 parameters: one array, but 3.6 GB
    IllegalArgumentException heap = assertThrows(IllegalArgumentException.class, () -> Net.fromJson(large));
    assertTrue(heap.getMessage().contains("more than half of this JVM's heap"), heap.getMessage());
  }

  @Test
  void aSavedModelWhoseNetworkDeclaresMoreThanItsFileHolds_isDamaged() throws IOException {
    Path model = copyOfFixture(dir.resolve("fixture"));
    Path bin = model.resolve("data/network.bin");
    byte[] rest;
    String json;
    try (DataInputStream in = new DataInputStream(Files.newInputStream(bin))) {
      json = new String(in.readNBytes(in.readInt()), StandardCharsets.UTF_8);
      rest = in.readAllBytes();
    }
    byte[] crafted = widened(json, 3_000_000_000L).getBytes(StandardCharsets.UTF_8);
    try (DataOutputStream out = new DataOutputStream(Files.newOutputStream(bin))) {
      out.writeInt(crafted.length);
      out.write(crafted);
      out.write(rest);
    }
    UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> Dl4jModel.load(model.toUri().toString()));
    assertTrue(e.getCause().getMessage().contains("network.bin is damaged: its network declares 27000000003 parameters"
        + " but the file holds 75"), e.getCause().getMessage());
  }
}
