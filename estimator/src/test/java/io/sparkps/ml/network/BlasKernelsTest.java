package io.sparkps.ml.network;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BlasKernelsTest {
  private static final Set<String> AVX512 = Set.of("fma", "avx2", "avx512f", "avx512cd", "avx512bw", "avx512dq",
      "avx512vl");

  @Test
  void suggested_followsTheCpusInstructions() {
    assertEquals(Optional.of("SkylakeX"), BlasKernels.suggested(AVX512));
    // AVX-512 without its byte and word instructions (Knights Landing): OpenBLAS's SkylakeX kernels need them.
    assertEquals(Optional.of("Haswell"), BlasKernels.suggested(Set.of("fma", "avx2", "avx512f", "avx512cd")));
    assertEquals(Optional.of("Haswell"), BlasKernels.suggested(Set.of("sse4_2", "avx", "avx2", "fma")));
    assertEquals(Optional.empty(), BlasKernels.suggested(Set.of("sse4_2", "avx")));
    assertEquals(Optional.empty(), BlasKernels.suggested(Set.of()));
  }

  @Test
  void cpuFlags_areTheFirstProcessorsFlags(@TempDir Path dir) throws IOException {
    Path cpuinfo = dir.resolve("cpuinfo");
    Files.writeString(cpuinfo, "processor\t: 0\nmodel\t\t: 207\nflags\t\t: fpu sse4_2 avx2 fma\n\n"
        + "processor\t: 1\nflags\t\t: fpu avx512f\n");
    assertEquals(Set.of("fpu", "sse4_2", "avx2", "fma"), BlasKernels.cpuFlags(cpuinfo));
    assertEquals(Set.of(), BlasKernels.cpuFlags(dir.resolve("missing")));
  }

  @Test
  void advice_onlyWhenTheKernelsAreBelowTheCpus_andNothingWasChosen() {
    String advice = BlasKernels.advice(Optional.of("PRESCOTT"), Optional.of("SkylakeX"), null).orElseThrow();
    assertTrue(advice.startsWith("ND4J's OpenBLAS runs its PRESCOTT kernels on this CPU, which runs SkylakeX's"), advice);
    assertTrue(advice.contains("spark.executorEnv.OPENBLAS_CORETYPE=SkylakeX"), advice);
    assertEquals(Optional.of(advice), BlasKernels.advice(Optional.of("PRESCOTT"), Optional.of("SkylakeX"), " "));
    assertTrue(BlasKernels.advice(Optional.of("SANDYBRIDGE"), Optional.of("Haswell"), null).isPresent());
    assertTrue(BlasKernels.advice(Optional.of("HASWELL"), Optional.of("SkylakeX"), null).isPresent());
    // The user's own choice stands, whatever it is.
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.of("PRESCOTT"), Optional.of("SkylakeX"), "Prescott"));
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.of("HASWELL"), Optional.of("Haswell"), null));
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.of("SKYLAKEX"), Optional.of("Haswell"), null));
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.of("ZEN"), Optional.of("Haswell"), null));
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.empty(), Optional.of("SkylakeX"), null));
    assertEquals(Optional.empty(), BlasKernels.advice(Optional.of("PRESCOTT"), Optional.empty(), null));
  }

  /** The kernels a JVM started with {@code OPENBLAS_CORETYPE=coreType} reads from its OpenBLAS. */
  private static String chosenIn(String coreType, Path dir) throws Exception {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), Probe.class.getName()));
    Path log = dir.resolve("probe-" + coreType + ".txt");
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().put("OMP_NUM_THREADS", "1");
    pb.environment().put(BlasKernels.ENV, coreType);
    Process p = pb.start();
    try {
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the probe JVM (" + BlasKernels.ENV + "=" + coreType
          + ") did not end within 120 s");
    } finally {
      p.destroyForcibly();
    }
    String out = Files.readString(log);
    assertEquals(0, p.exitValue(), out);
    return out.lines().filter(l -> l.startsWith("chosen=")).findFirst().orElseThrow(() -> new AssertionError(out))
        .substring("chosen=".length());
  }

  @Test
  void chosen_readsTheKernelsOpenBlasLoaded(@TempDir Path dir) throws Exception {
    assumeTrue(System.getProperty("os.arch").equals("amd64") && System.getProperty("os.name").equals("Linux"),
        "ND4J's OpenBLAS here is linux-x86_64's");
    assertEquals("Optional[PRESCOTT]", chosenIn("Prescott", dir));
    assumeTrue(BlasKernels.suggested(BlasKernels.cpuFlags()).isPresent(), "a CPU without AVX2");
    assertEquals("Optional[HASWELL]", chosenIn("Haswell", dir));
  }

  /** Prints what this JVM's OpenBLAS chose, and the advice; run in a JVM of its own by the tests above. */
  public static final class Probe {
    public static void main(String[] args) {
      System.out.println("chosen=" + BlasKernels.chosen());
      System.out.println("advice=" + BlasKernels.advice());
      System.exit(0);
    }
  }
}
