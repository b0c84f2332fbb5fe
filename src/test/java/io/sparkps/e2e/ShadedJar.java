package io.sparkps.e2e;

import java.io.File;
import java.nio.file.Path;
import java.util.stream.Stream;

/** The shaded jar users hand to spark-submit, as the build put it on the test class path. */
final class ShadedJar {
  private ShadedJar() {}

  /** {@code sparkps-estimator_<scala>-<version>-all.jar}; AssertionError if it is not on the class path. */
  static Path path() {
    return Stream.of(System.getProperty("java.class.path").split(File.pathSeparator)).map(Path::of)
        .filter(p -> p.getFileName().toString().matches("sparkps-estimator_[0-9.]+-.*-all\\.jar")).findFirst()
        .orElseThrow(() -> new AssertionError("the shaded jar is not on the test class path"));
  }
}
