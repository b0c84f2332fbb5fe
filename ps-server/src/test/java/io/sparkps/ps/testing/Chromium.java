package io.sparkps.ps.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real browser for tests: Debian's headless Chromium loads a page, runs its scripts, and
 * returns the document as it then stands (what a user would see, as HTML).
 */
public final class Chromium {
  private static final List<String> NAMES = List.of("chromium", "chromium-browser", "google-chrome");

  private Chromium() {}

  /** The browser's path; fails naming the package to install when there is none. */
  public static String binary() {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
      for (String name : NAMES) {
        Path p = Path.of(dir, name);
        if (Files.isExecutable(p)) {
          return p.toString();
        }
      }
    }
    throw new IllegalStateException("no Chromium on the PATH: install Debian's chromium package (apt-get install "
        + "chromium; .ci/run does)");
  }

  /** Loads {@code url} and saves what a {@code width} x {@code height} window shows as a PNG (for people to look at). */
  public static void screenshot(String url, Path png, int width, int height) throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory("sparkps-chromium");
    try {
      Process p = new ProcessBuilder(binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--user-data-dir=" + profile, "--hide-scrollbars", "--window-size=" + width + "," + height,
          "--virtual-time-budget=2000", "--screenshot=" + png.toAbsolutePath(), url)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("Chromium did not load " + url + " within 90 s");
      }
    } finally {
      try (var files = Files.walk(profile)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  /**
   * Loads {@code url} and returns its DOM after {@code budgetMillis} of the page's own time (its
   * timers and fetches run), within 90 s of real time.
   */
  public static String dumpDom(String url, int budgetMillis) throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory("sparkps-chromium");
    Path out = Files.createTempFile("sparkps-dom", ".html");
    try {
      Process p = new ProcessBuilder(binary(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--user-data-dir=" + profile, "--virtual-time-budget=" + budgetMillis, "--dump-dom", url)
          .redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
      if (!p.waitFor(90, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("Chromium did not load " + url + " within 90 s");
      }
      String dom = Files.readString(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0 || dom.isBlank()) {
        throw new IllegalStateException("Chromium could not load " + url + " (exit " + p.exitValue() + ")");
      }
      return dom;
    } finally {
      Files.deleteIfExists(out);
      try (var files = Files.walk(profile)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }
}
