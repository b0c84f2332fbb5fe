package io.sparkps.notebook;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** The text of a {@code kernel.json}: argv, display name, language, environment, interrupts by message. */
final class KernelSpecJson {
  private KernelSpecJson() {}

  static String write(List<String> argv, String displayName, Map<String, String> env) {
    String args = argv.stream().map(KernelSpecJson::quote).collect(Collectors.joining(",\n    "));
    String vars = env.entrySet().stream().map(e -> quote(e.getKey()) + ": " + quote(e.getValue()))
        .collect(Collectors.joining(",\n    "));
    return "{\n  \"argv\": [\n    " + args + "\n  ],\n"
        + "  \"display_name\": " + quote(displayName) + ",\n"
        + "  \"language\": \"java\",\n"
        // interrupts arrive as messages: the kernel cancels the cell's work instead of being signalled
        + "  \"interrupt_mode\": \"message\",\n"
        + "  \"env\": {\n    " + vars + "\n  },\n"
        + "  \"metadata\": {\"debugger\": false}\n}\n";
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
