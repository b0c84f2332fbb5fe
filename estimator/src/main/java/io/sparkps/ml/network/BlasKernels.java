package io.sparkps.ml.network;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;

/**
 * Which kernels ND4J's OpenBLAS runs its matrix products with, and which it should.
 *
 * <p>ND4J 1.0.0-M2.1 ships OpenBLAS 0.3.19, which picks its kernels by the CPU's model number. On a
 * CPU newer than it knows (Intel's Sapphire and Emerald Rapids, for one) it falls back to its oldest
 * x86-64 kernels, Prescott's (SSE3), though the CPU has AVX2 and AVX-512: on a 2-core Xeon of model
 * 207 the large MLP's step took 2.5x as long and LeNet's 1.6x. The environment variable
 * {@code OPENBLAS_CORETYPE} overrides the choice; it is read when the library loads, so it has to be
 * in the environment of the JVM that trains. SparkPS's Python sessions set it for their local JVM
 * ({@link #suggested}); every worker checks what its JVM got ({@link #advice}) and says so in its
 * progress when the kernels are below what the CPU runs.
 */
public final class BlasKernels {
  /** The environment variable OpenBLAS reads for its kernels. */
  public static final String ENV = "OPENBLAS_CORETYPE";

  /** OpenBLAS's x86-64 kernel sets (its {@code gotoblas_<NAME>} tables) by the instructions they use. */
  private static final Map<String, Integer> LEVELS = Map.ofEntries(
      Map.entry("PRESCOTT", 1), Map.entry("CORE2", 1), Map.entry("PENRYN", 1), Map.entry("DUNNINGTON", 1),
      Map.entry("NEHALEM", 1), Map.entry("ATOM", 1), Map.entry("OPTERON", 1), Map.entry("OPTERON_SSE3", 1),
      Map.entry("BARCELONA", 1), Map.entry("BOBCAT", 1), Map.entry("SANDYBRIDGE", 2), Map.entry("BULLDOZER", 2),
      Map.entry("PILEDRIVER", 2), Map.entry("STEAMROLLER", 2), Map.entry("HASWELL", 3), Map.entry("ZEN", 3),
      Map.entry("EXCAVATOR", 3), Map.entry("SKYLAKEX", 4), Map.entry("COOPERLAKE", 4),
      Map.entry("SAPPHIRERAPIDS", 4));

  /** What OpenBLAS's AVX-512 kernels (SkylakeX) need of the CPU. */
  private static final List<String> AVX512 = List.of("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl");

  private BlasKernels() {}

  /**
   * The {@code OPENBLAS_CORETYPE} the CPU with these {@code /proc/cpuinfo} flags runs best:
   * {@code SkylakeX} with AVX-512 (F, CD, BW, DQ and VL), {@code Haswell} with AVX2 and FMA, else empty.
   */
  public static Optional<String> suggested(Set<String> cpuFlags) {
    if (cpuFlags.containsAll(AVX512)) {
      return Optional.of("SkylakeX");
    }
    if (cpuFlags.contains("avx2") && cpuFlags.contains("fma")) {
      return Optional.of("Haswell");
    }
    return Optional.empty();
  }

  /** The flags of this machine's first CPU in {@code /proc/cpuinfo}; empty where there is none (not Linux). */
  public static Set<String> cpuFlags() {
    return cpuFlags(Path.of("/proc/cpuinfo"));
  }

  static Set<String> cpuFlags(Path cpuinfo) {
    try (var lines = Files.lines(cpuinfo)) {
      return lines.filter(l -> l.startsWith("flags")).findFirst()
          .map(l -> Set.copyOf(Arrays.asList(l.substring(l.indexOf(':') + 1).trim().split("\\s+"))))
          .orElse(Set.of());
    } catch (IOException | RuntimeException e) {
      return Set.of();
    }
  }

  /**
   * The kernel set this JVM's OpenBLAS chose, in its own upper-case name ({@code PRESCOTT},
   * {@code SKYLAKEX}, ...), or empty when it cannot be told (no OpenBLAS loaded, or not one built
   * for several CPUs). Read from the library's {@code gotoblas} pointer, which points at the chosen
   * kernel table; nothing is written.
   */
  public static Optional<String> chosen() {
    try {
      org.nd4j.linalg.factory.Nd4j.getBlasWrapper(); // loads ND4J's backend, and OpenBLAS with it
      Pointer table = org.bytedeco.javacpp.Loader.addressof("gotoblas");
      if (table == null || table.isNull()) {
        return Optional.empty();
      }
      long chosen = new LongPointer(table).get();
      for (String name : LEVELS.keySet()) {
        Pointer candidate = org.bytedeco.javacpp.Loader.addressof("gotoblas_" + name);
        if (candidate != null && candidate.address() == chosen) {
          return Optional.of(name);
        }
      }
      return Optional.empty();
    } catch (RuntimeException | LinkageError e) {
      return Optional.empty();
    }
  }

  /**
   * What to tell the user when this JVM's OpenBLAS runs kernels below what its CPU runs and
   * {@code OPENBLAS_CORETYPE} was not set; empty when all is well or it cannot be told.
   */
  public static Optional<String> advice() {
    return advice(chosen(), suggested(cpuFlags()), System.getenv(ENV));
  }

  static Optional<String> advice(Optional<String> chosen, Optional<String> suggested, String env) {
    if (chosen.isEmpty() || suggested.isEmpty() || (env != null && !env.isBlank())) {
      return Optional.empty();
    }
    int got = LEVELS.getOrDefault(chosen.get(), Integer.MAX_VALUE);
    int could = LEVELS.get(suggested.get().toUpperCase(java.util.Locale.ROOT));
    if (got >= could) {
      return Optional.empty();
    }
    return Optional.of("ND4J's OpenBLAS runs its " + chosen.get() + " kernels on this CPU, which runs "
        + suggested.get() + "'s (OpenBLAS 0.3.19 does not know its model): matrix products take up to 2.5x as long. "
        + "Set " + ENV + "=" + suggested.get() + " in the environment of the JVMs that train (spark-submit "
        + "--conf spark.executorEnv." + ENV + "=" + suggested.get() + ", and the driver's own environment in "
        + "local mode); sparkps.local_session() sets it itself");
  }
}
