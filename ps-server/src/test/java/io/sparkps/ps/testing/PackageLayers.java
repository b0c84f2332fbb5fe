package io.sparkps.ps.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Checks that a module's packages are layers: a source file of one layer names classes of its own
 * layer and those below, never above. Layers are subpackages of a base package, by name relative
 * to it ({@code ""} for the base package itself); references to packages given no layer are not
 * checked.
 */
public final class PackageLayers {
  /** What a check read and found. */
  public record Found(int files, List<String> upward) {}

  private PackageLayers() {}

  /**
   * Reads the sources of each layer's package below {@code sources} (the base package's folder) and
   * lists each reference upward as {@code "bulk/BulkServer.java names io.sparkps.ps.grpc.StatusMapping"}.
   */
  public static Found check(Path sources, String basePackage, Map<String, Integer> layers) throws IOException {
    String named = layers.keySet().stream().filter(k -> !k.isEmpty()).collect(Collectors.joining("|"));
    String optional = layers.containsKey("") ? "?" : "";
    Pattern reference = Pattern.compile(Pattern.quote(basePackage + ".") + "(?:(" + named + ")\\.)" + optional
        + "[A-Z]\\w*");
    List<String> upward = new ArrayList<>();
    int files = 0;
    for (Map.Entry<String, Integer> layer : layers.entrySet()) {
      try (Stream<Path> listed = Files.list(sources.resolve(layer.getKey()))) {
        for (Path f : listed.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
          files++;
          Matcher m = reference.matcher(Files.readString(f));
          while (m.find()) {
            String target = m.group(1) == null ? "" : m.group(1);
            if (layers.get(target) > layer.getValue()) {
              upward.add((layer.getKey().isEmpty() ? "" : layer.getKey() + "/") + f.getFileName() + " names " + m.group());
            }
          }
        }
      }
    }
    return new Found(files, upward);
  }
}
