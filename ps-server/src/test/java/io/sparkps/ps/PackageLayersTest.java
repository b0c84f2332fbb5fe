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
 * The parameter server's packages are layers without cycles: the public API at the bottom (the
 * annotation that marks what is internal, and what a run declares, {@code spec}; TLS; then
 * {@code io.sparkps.ps} itself, the client and server interfaces), so it names nothing internal;
 * above it the wire toolbox, the shard, the bulk data
 * plane, the gRPC adapters, and the implementations of the client and of the server on top. The
 * seed example, user code, sits with the API: it names nothing internal either. A class may name
 * classes of its own layer and those below, never above (the generated protos are below the
 * internal packages).
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.ofEntries(Map.entry("annotation", 0), Map.entry("spec", 0), Map.entry("tls", 1),
      Map.entry("", 2), Map.entry("example", 2), Map.entry("wire", 3), Map.entry("server", 4), Map.entry("bulk", 5),
      Map.entry("grpc", 6), Map.entry("client", 7), Map.entry("host", 8));

  @Test
  void noPackage_namesOneAboveIt() throws IOException {
    PackageLayers.Found found = PackageLayers.check(Path.of("src/main/java/io/sparkps/ps"), "io.sparkps.ps", LAYER);
    assertTrue(found.files() > 80, "the sources were found: " + found.files());
    assertEquals(List.of(), found.upward(),
        "references from a lower layer to a higher one "
            + "(annotation, spec < tls < io.sparkps.ps, example < wire < server < bulk < grpc < client < host)");
  }
}
