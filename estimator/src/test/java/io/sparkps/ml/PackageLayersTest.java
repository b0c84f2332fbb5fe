package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.testing.PackageLayers;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The estimator's packages are layers without cycles: the data's conversions and the network
 * adapters at the bottom, then the training options, the checkpoints and a trained model's
 * scoring, the training loop, the embedding model (which plugs its inputs, steps and scoring into
 * them), the public API, and its Python bridge on top. A class names classes of its own layer and those below, never above.
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.ofEntries(Map.entry("data", 0),
      Map.entry("network", 0), Map.entry("datasets", 1), Map.entry("param", 1), Map.entry("checkpoint", 1),
      Map.entry("scoring", 1), Map.entry("tracking", 1), Map.entry("training", 2), Map.entry("embedding", 3),
      Map.entry("", 4), Map.entry("python", 5));

  @Test
  void noPackage_namesOneAboveIt() throws IOException {
    PackageLayers.Found found = PackageLayers.check(Path.of("src/main/java/io/sparkps/ml"), "io.sparkps.ml", LAYER);
    assertTrue(found.files() > 60, "the sources were found: " + found.files());
    assertEquals(List.of(), found.upward(), "references from a lower layer to a higher one (data, network < param, "
        + "checkpoint, scoring, tracking, datasets < training < embedding < ml < python)");
  }
}
