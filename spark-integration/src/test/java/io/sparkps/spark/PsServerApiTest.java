package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkps.ps.client.RunChannels;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The modules above ps-server use its public packages (io.sparkps.ps, io.sparkps.ps.spec,
 * io.sparkps.ps.tls) and, for what only SparkPS's own modules do (a worker's kept copy, a step's
 * transfers in parts, a table's refill, the run's channels), the client implementation's
 * {@code @Internal} classes in io.sparkps.ps.client; never the packages below it (wire, server,
 * bulk, grpc) nor the server's implementation (host), whose classes may change with any release.
 */
class PsServerApiTest {
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();
  private static final Pattern INTERNAL = Pattern.compile("io\\.sparkps\\.ps\\.(grpc|server|bulk|wire|host)\\.");

  @Test
  void mainCodeAboveThePsServer_usesOnlyItsPublicPackages() throws IOException {
    List<String> found = new ArrayList<>();
    for (String module : List.of("spark-integration", "estimator", "notebooks")) {
      try (Stream<Path> files = Files.walk(ROOT.resolve(module).resolve("src/main/java"))) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          if (INTERNAL.matcher(Files.readString(f)).find()) {
            found.add(ROOT.relativize(f).toString());
          }
        }
      }
    }
    assertEquals(List.of(), found, "these name ps-server's internal packages: use io.sparkps.ps's public classes "
        + "(io.sparkps.ps.client.RunChannels for the run's token and TLS)");
  }
}
