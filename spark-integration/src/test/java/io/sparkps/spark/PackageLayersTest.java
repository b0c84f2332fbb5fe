package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.testing.PackageLayers;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * spark-integration's packages are layers without cycles: the coordinator (its registry and
 * wire), then recovery (the supervisor's decisions and the tasks' side of a ps loss), then the
 * training cluster's public package, then YARN's submitter. A class names classes of its own layer
 * and those below, never above.
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.of("coord", 0, "recovery", 1, "ui", 1, "", 2, "yarn", 3);

  @Test
  void noPackage_namesOneAboveIt() throws IOException {
    PackageLayers.Found found = PackageLayers.check(Path.of("src/main/java/io/sparkps/spark"), "io.sparkps.spark",
        LAYER);
    assertTrue(found.files() > 50, "the sources were found: " + found.files());
    assertEquals(List.of(), found.upward(),
        "references from a lower layer to a higher one (coord < recovery < spark < yarn)");
  }
}
