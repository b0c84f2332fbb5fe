package io.sparkps.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.wire.WireLimits;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** The settings, declared once: parsed, validated, documented, and named nowhere else. */
class SparkPsConfTest {
  /** The repository's root (tests run in a module's folder). */
  private static final Path ROOT = Path.of("").toAbsolutePath().getParent();

  @Test
  void defaults_andValues_parse() {
    SparkConf empty = new SparkConf(false);
    assertEquals("auto", SparkPsConf.TLS_ENABLED.get(empty));
    assertEquals(WireLimits.DEFAULT_MAX_VARIABLE_ELEMENTS, SparkPsConf.PS_MAX_VARIABLE_ELEMENTS.get(empty));
    assertEquals(false, SparkPsConf.DATA_ALWAYS_SHUFFLE.get(empty));
    assertEquals(128L << 20, SparkPsConf.DATA_IN_MEMORY_MAX.get(empty));
    assertEquals(16384, SparkPsConf.DATA_SHUFFLE_WINDOW.get(empty));
    assertEquals(true, SparkPsConf.TRAIN_REUSE_FORWARD_PASS.get(empty));
    assertEquals(false, SparkPsConf.CHECKPOINT_SHARED_FILE_SYSTEM.get(empty));
    assertEquals("WARN", SparkPsConf.CLI_LOG_LEVEL.get(empty));
    SparkConf set = new SparkConf(false).set("spark.sparkps.tls.enabled", " TRUE ")
        .set("spark.sparkps.data.shuffle", "Always").set("spark.sparkps.data.inMemoryMax", "2g")
        .set("spark.sparkps.ps.maxVariableElements", "1000").set("spark.sparkps.cli.logLevel", "info");
    assertEquals("true", SparkPsConf.TLS_ENABLED.get(set));
    assertEquals(true, SparkPsConf.DATA_ALWAYS_SHUFFLE.get(set));
    assertEquals(2L << 30, SparkPsConf.DATA_IN_MEMORY_MAX.get(set));
    assertEquals(1000L, SparkPsConf.PS_MAX_VARIABLE_ELEMENTS.get(set));
    assertEquals("INFO", SparkPsConf.CLI_LOG_LEVEL.get(set));
  }

  @Test
  void aBadValue_namesTheKeyTheValueAndWhatItMayBe() {
    String[][] cases = {{"spark.sparkps.tls.enabled", "yes", "set it to true, false or auto"},
        {"spark.sparkps.ps.maxVariableElements", "0", "give a number of elements >= 1"},
        {"spark.sparkps.ps.maxVariableElements", "many", "give a number of elements >= 1"},
        {"spark.sparkps.data.shuffle", "sometimes", "set it to auto"},
        {"spark.sparkps.data.inMemoryMax", "lots", "give a size such as 128m"},
        {"spark.sparkps.data.shuffleWindow", "-3", "give a number of rows >= 1"},
        {"spark.sparkps.train.reuseForwardPass", "maybe", "set it to true"},
        {"spark.sparkps.checkpoint.sharedFileSystem", "1", "set it to true or false"},
        {"spark.sparkps.cli.logLevel", "LOUD", "one of Log4j's levels"}};
    for (String[] c : cases) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> SparkPsConf.setting(c[0]).get(new SparkConf(false).set(c[0], c[1])), c[0]);
      assertTrue(e.getMessage().startsWith(c[0] + " is '" + c[1] + "': ") && e.getMessage().contains(c[2]),
          e.getMessage());
    }
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> SparkPsConf.setting("spark.sparkps.data.shufle"));
    assertTrue(unknown.getMessage().startsWith("unknown SparkPS setting 'spark.sparkps.data.shufle': the settings are [")
        && unknown.getMessage().contains("spark.sparkps.data.shuffle,"), unknown.getMessage());
  }

  @Test
  void theDocsTable_isTheDeclaredOne() throws IOException {
    String doc = Files.readString(ROOT.resolve("docs/configuration.md"));
    Matcher m = Pattern.compile("<!-- settings:begin -->\n(.*)<!-- settings:end -->", Pattern.DOTALL).matcher(doc);
    assertTrue(m.find(), "docs/configuration.md has no table between <!-- settings:begin --> and <!-- settings:end -->");
    assertEquals(SparkPsConf.markdownTable(), m.group(1), "docs/configuration.md's table differs from SparkPsConf's "
        + "declarations: paste SparkPsConf.markdownTable() between its markers");
  }

  @Test
  void noOtherMainClass_namesASparkPsKey() throws IOException {
    List<String> found = new ArrayList<>();
    for (String module : List.of("ps-server", "spark-integration", "estimator", "notebooks")) {
      Path main = ROOT.resolve(module).resolve("src/main");
      if (!Files.isDirectory(main)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(main)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java") && !p.endsWith("SparkPsConf.java")).toList()) {
          if (Files.readString(f).contains("\"spark.sparkps.")) {
            found.add(ROOT.relativize(f).toString());
          }
        }
      }
    }
    assertEquals(List.of(), found, "spark.sparkps.* keys are declared in SparkPsConf only");
  }
}
