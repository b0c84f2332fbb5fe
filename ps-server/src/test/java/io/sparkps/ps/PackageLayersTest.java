package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.testing.PackageLayers;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The parameter server's internal packages are layers without cycles: the wire toolbox and TLS
 * at the bottom, then the shard, the bulk data plane, the gRPC adapters. A class may name classes
 * of its own layer and those below, never above (the generated protos are below them all).
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.of("wire", 0, "tls", 0, "server", 1, "bulk", 2, "grpc", 3);

  @Test
  void noInternalPackage_namesOneAboveIt() throws IOException {
    PackageLayers.Found found = PackageLayers.check(Path.of("src/main/java/io/sparkps/ps"), "io.sparkps.ps", LAYER);
    assertTrue(found.files() > 40, "the sources were found: " + found.files());
    assertEquals(List.of(), found.upward(),
        "references from a lower layer to a higher one (wire, tls < server < bulk < grpc)");
  }
}
