package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The parameter server's internal packages are layers without cycles: the wire toolbox and TLS
 * at the bottom, then the shard, the bulk data plane, the gRPC adapters. A class may name classes
 * of its own layer and those below, never above (the generated protos are below them all).
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.of("wire", 0, "tls", 0, "server", 1, "bulk", 2, "grpc", 3);
  private static final Pattern REFERENCE = Pattern.compile("io\\.sparkps\\.ps\\.(wire|tls|server|bulk|grpc)\\.[A-Z]");
  private static final Path MAIN = Path.of("src/main/java/io/sparkps/ps");

  @Test
  void noInternalPackage_namesOneAboveIt() throws IOException {
    List<String> upward = new ArrayList<>();
    int files = 0;
    for (String pkg : LAYER.keySet()) {
      try (Stream<Path> sources = Files.list(MAIN.resolve(pkg))) {
        for (Path f : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
          files++;
          Matcher m = REFERENCE.matcher(Files.readString(f));
          while (m.find()) {
            if (LAYER.get(m.group(1)) > LAYER.get(pkg)) {
              upward.add(pkg + "/" + f.getFileName() + " names " + m.group().substring(0, m.group().length() - 1));
            }
          }
        }
      }
    }
    assertTrue(files > 40, "the sources were found: " + files);
    assertEquals(List.of(), upward, "references from a lower layer to a higher one (wire, tls < server < bulk < grpc)");
  }
}
