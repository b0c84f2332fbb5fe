package io.sparkps.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * What the shaded jar users hand to spark-submit holds: the libraries that would clash with a
 * Spark's or a notebook kernel's own copies only under {@code io.sparkps.shaded}, SparkPS's
 * classes with the parameter server's provider named in its merged {@code META-INF/services}, and
 * ND4J's natives for linux-x86_64 alone.
 */
class ShadedJarIT {
  @Test
  void clashingLibrariesAreRelocated_andNativesAreLinuxX8664Only() throws Exception {
    String scalaVersion = scala.util.Properties.versionNumberString();
    Path jar = ShadedJar.path();
    assertTrue(jar.getFileName().toString().startsWith("sparkps-estimator_" + scalaVersion.substring(0, scalaVersion.lastIndexOf('.')) + "-"),
        jar + " names the Scala version it was built for (" + scalaVersion + ")");
    try (ZipFile zip = new ZipFile(jar.toFile())) {
      List<String> names = zip.stream().map(ZipEntry::getName).toList();
      for (String pkg : List.of("io/grpc/", "com/google/protobuf/", "com/google/common/", "com/google/gson/")) {
        assertEquals(List.of(), names.stream().filter(n -> n.startsWith(pkg) && n.endsWith(".class")).limit(3).toList(),
            pkg + " must be relocated under io/sparkps/shaded/");
        assertTrue(names.contains("io/sparkps/shaded/" + pkg.substring(0, pkg.length() - 1) + "/")
            || names.stream().anyMatch(n -> n.startsWith("io/sparkps/shaded/" + pkg)), pkg + " is inside, relocated");
      }
      for (String spark : List.of("org/apache/spark/", "scala/", "org/apache/hadoop/", "com/fasterxml/jackson/", "org/slf4j/")) {
        assertTrue(names.stream().noneMatch(n -> n.startsWith(spark) && n.endsWith(".class")),
            spark + " comes from the Spark the jar runs in");
      }
      assertTrue(names.contains("io/sparkps/cli/SparkPsCli.class") && names.contains("io/sparkps/ml/Dl4jEstimator.class"));
      ZipEntry providers = zip.getEntry("META-INF/services/io.sparkps.ps.PsProvider");
      assertTrue(providers != null, "the parameter server's API finds its implementation through this file");
      assertEquals("io.sparkps.ps.host.GrpcProvider",
          new String(zip.getInputStream(providers).readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim());
      List<String> natives = names.stream().filter(n -> n.startsWith("org/bytedeco/") && n.endsWith(".so")).toList();
      assertTrue(natives.size() >= 3, "ND4J's natives are inside: " + natives);
      assertEquals(List.of(), natives.stream().filter(n -> !n.contains("/linux-x86_64/")).limit(5).toList(),
          "natives of platforms other than linux-x86_64");
    }
  }
}
