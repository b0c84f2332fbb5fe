package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A model saved by the build for Spark 3.5 (Scala 2.12) loads in the build for Spark 4 (Scala
 * 2.13) and the other way round: every fixture of {@link SavedModelFixtures}, whichever build
 * saved it, loads here and predicts what it predicted where it was saved.
 */
class SavedModelCompatibilityTest {
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(2, "saved-models");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @Test
  void modelsSavedByEitherBuild_loadAndPredictAsWhereTheyWereSaved() throws Exception {
    Path root = Path.of("src/test/resources/saved-models");
    List<Path> fixtures;
    try (Stream<Path> dirs = Files.list(root)) {
      fixtures = dirs.filter(Files::isDirectory).sorted().toList();
    }
    List<String> versions = fixtures.stream().map(p -> p.getFileName().toString()).toList();
    assertTrue(versions.stream().anyMatch(v -> v.startsWith("spark-3.5.")) && versions.stream().anyMatch(v -> v.startsWith("spark-4.")),
        "fixtures of both builds: " + versions);
    for (Path fixture : fixtures) {
      Dl4jModel model = Dl4jModel.load(fixture.resolve("model").toUri().toString());
      // Spark 3.5 writes the metadata as part-00000, Spark 4 as part-00000-<uuid>-c000.txt
      String savedBy;
      try (Stream<Path> parts = Files.list(fixture.resolve("model").resolve("metadata"))) {
        savedBy = Files.readString(parts.filter(p -> p.getFileName().toString().startsWith("part-")).findFirst()
            .orElseThrow(() -> new AssertionError("no metadata part file in " + fixture)));
      }
      assertTrue(savedBy.contains("\"sparkVersion\":\"" + fixture.getFileName().toString().substring("spark-".length()) + "\""),
          "the fixture was saved by the Spark its folder names: " + savedBy);
      List<String> expected = Files.readAllLines(fixture.resolve("probabilities.csv"));
      List<String> actual = SavedModelFixtures.probabilities(model, spark);
      assertEquals(12, expected.size());
      assertEquals(expected.size(), actual.size());
      for (int i = 0; i < expected.size(); i++) {
        double[] e = Stream.of(expected.get(i).split(",")).mapToDouble(Double::parseDouble).toArray();
        double[] a = Stream.of(actual.get(i).split(",")).mapToDouble(Double::parseDouble).toArray();
        assertEquals(3, a.length);
        for (int k = 0; k < 3; k++) {
          assertEquals(e[k], a[k], 1e-6, fixture.getFileName() + ", input " + i + ", class " + k + " (running on Spark "
              + spark.version() + ")");
        }
      }
      assertEquals("dl4j-fixture", model.uid());
    }
  }
}
