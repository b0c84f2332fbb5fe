package io.sparkps.ps.bulk;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * The bfloat16 codec's four paths, each against the float32 path's copy of the same values
 * (what a float32 transfer does in their place), side by side in every round: the client's
 * encode of a push and decode of a pull (direct buffers), the shard's decode of a push into its
 * float array and encode of a read from it. Prints GB/s of float32 values (4 bytes each) per path,
 * the codec's ratio to the copy (medians over rounds), and ns per value.
 *
 * <p>Run: {@code mvn -q -B -ntp -pl ps-server exec:exec@bf16-benchmark} (after {@code mvn install
 * -DskipTests}). Arguments: millions of values (default 4), rounds (default 15).
 */
public final class Bf16Benchmark {
  private Bf16Benchmark() {}

  private interface Path {
    void run();
  }

  public static void main(String[] args) {
    int n = (int) (Double.parseDouble(args.length > 0 ? args[0] : "4") * 1_000_000);
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 15;
    System.out.printf(Locale.ROOT, "bfloat16 codec: %,d values, %d rounds (after 5 untimed), Java %s%n", n, rounds,
        System.getProperty("java.version"));
    float[] values = new float[n];
    Random random = new Random(1);
    for (int i = 0; i < n; i++) {
      values[i] = (float) random.nextGaussian();
    }
    ByteBuffer floats = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.LITTLE_ENDIAN);
    floats.asFloatBuffer().put(values);
    ByteBuffer halves = ByteBuffer.allocateDirect(2 * n).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer floatsOut = ByteBuffer.allocateDirect(4 * n).order(ByteOrder.LITTLE_ENDIAN);
    float[] array = new float[n];
    Bf16.encode(floats.duplicate().order(ByteOrder.LITTLE_ENDIAN), halves.clear());
    Map<String, Path> paths = new LinkedHashMap<>();
    paths.put("client encode (push)", () -> Bf16.encode(floats.duplicate().order(ByteOrder.LITTLE_ENDIAN),
        halves.clear()));
    paths.put("  float32: buffer copy", () -> floatsOut.clear().put(floats.duplicate()));
    paths.put("client decode (pull)", () -> Bf16.decode(halves.clear(), floatsOut.clear()));
    paths.put("  float32: buffer copy ", () -> floatsOut.clear().put(floats.duplicate()));
    paths.put("shard decode (push)", () -> Bf16.decode(halves.clear(), array, 0, n));
    paths.put("  float32: buffer to array", () -> floats.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer()
        .get(array, 0, n));
    paths.put("shard encode (read)", () -> Bf16.encode(values, 0, n, halves.clear()));
    paths.put("  float32: array to buffer", () -> floatsOut.clear().asFloatBuffer().put(values, 0, n));
    Map<String, List<Double>> rates = new LinkedHashMap<>();
    Map<String, List<Double>> ratios = new LinkedHashMap<>();
    for (int round = -5; round < rounds; round++) {
      String codec = null;
      double codecRate = 0;
      for (Map.Entry<String, Path> p : paths.entrySet()) {
        long t0 = System.nanoTime();
        p.getValue().run();
        double rate = 4.0 * n / (System.nanoTime() - t0); // GB/s of float32 values
        if (round < 0) {
          continue;
        }
        rates.computeIfAbsent(p.getKey(), k -> new ArrayList<>()).add(rate);
        if (!p.getKey().startsWith(" ")) {
          codec = p.getKey();
          codecRate = rate;
        } else {
          ratios.computeIfAbsent(codec, k -> new ArrayList<>()).add(codecRate / rate);
        }
      }
    }
    System.out.println("GB/s of float32 values (median of rounds), ns per value:");
    rates.forEach((k, v) -> System.out.printf(Locale.ROOT, "  %-28s %6.2f GB/s  %5.2f ns%n", k, median(v),
        4 / median(v)));
    System.out.println("codec / float32 copy (median of per-round ratios, min-max):");
    ratios.forEach((k, v) -> System.out.printf(Locale.ROOT, "  %-28s %5.2fx  (%.2f-%.2f)%n", k, median(v),
        v.stream().mapToDouble(Double::doubleValue).min().orElse(0),
        v.stream().mapToDouble(Double::doubleValue).max().orElse(0)));
  }

  private static double median(List<Double> v) {
    double[] s = v.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
