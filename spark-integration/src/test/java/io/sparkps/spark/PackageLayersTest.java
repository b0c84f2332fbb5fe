package io.sparkps.spark;

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
 * spark-integration's packages are layers without cycles: the coordinator (its registry and
 * wire), then recovery (the supervisor's decisions and the tasks' side of a ps loss), then the
 * training cluster's public package, then YARN's submitter. A class names classes of its own layer
 * and those below, never above.
 */
class PackageLayersTest {
  private static final Map<String, Integer> LAYER = Map.of("coord", 0, "recovery", 1, "", 2, "yarn", 3);
  /** A class of io.sparkps.spark (group 1 empty) or of one of its packages. */
  private static final Pattern REFERENCE = Pattern.compile("io\\.sparkps\\.spark\\.(?:(coord|recovery|yarn)\\.)?[A-Z]\\w*");
  private static final Path MAIN = Path.of("src/main/java/io/sparkps/spark");

  @Test
  void noPackage_namesOneAboveIt() throws IOException {
    List<String> upward = new ArrayList<>();
    int files = 0;
    for (String pkg : LAYER.keySet()) {
      try (Stream<Path> sources = Files.list(MAIN.resolve(pkg))) {
        for (Path f : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
          files++;
          Matcher m = REFERENCE.matcher(Files.readString(f));
          while (m.find()) {
            String target = m.group(1) == null ? "" : m.group(1);
            if (LAYER.get(target) > LAYER.get(pkg)) {
              upward.add((pkg.isEmpty() ? "" : pkg + "/") + f.getFileName() + " names " + m.group());
            }
          }
        }
      }
    }
    assertTrue(files > 50, "the sources were found: " + files);
    assertEquals(List.of(), upward, "references from a lower layer to a higher one (coord < recovery < spark < yarn)");
  }
}
