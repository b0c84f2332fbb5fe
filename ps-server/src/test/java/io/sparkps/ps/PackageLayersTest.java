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
 * The parameter server's packages are layers without cycles: what a run declares ({@code spec})
 * at the bottom, then the wire toolbox and TLS, the shard, the bulk data plane, the gRPC adapters,
 * and the client and server on top ({@code io.sparkps.ps} itself). A class may name classes of its
 * own layer and those below, never above (the generated protos are below them all).
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.of("spec", 0, "wire", 1, "tls", 1, "server", 2, "bulk", 3, "grpc", 4, "", 5);

  @Test
  void noInternalPackage_namesOneAboveIt() throws IOException {
    PackageLayers.Found found = PackageLayers.check(Path.of("src/main/java/io/sparkps/ps"), "io.sparkps.ps", LAYER);
    assertTrue(found.files() > 80, "the sources were found: " + found.files());
    assertEquals(List.of(), found.upward(),
        "references from a lower layer to a higher one (spec < wire, tls < server < bulk < grpc < io.sparkps.ps)");
  }
}
