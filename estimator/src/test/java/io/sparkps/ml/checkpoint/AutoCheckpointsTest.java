package io.sparkps.ml.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.LocalSpark;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where a fit checkpoints when its checkpointDir is unset, "none", or named (the rule of {@link AutoCheckpoints}). */
class AutoCheckpointsTest {
  private static SparkSession spark;
  @TempDir
  Path dir;

  @BeforeAll
  static void start() {
    spark = LocalSpark.start(2, "auto-checkpoints-test");
  }

  @AfterAll
  static void stop() {
    spark.stop(); // the next class's getOrCreate would get this session, with its 2 slots
  }

  @AfterEach
  void unsetSparksCheckpointDirectory() {
    // Spark has no public way to unset it; its field's setter is public in the bytecode (private[spark] in Scala).
    spark.sparkContext().checkpointDir_$eq(scala.Option.empty());
  }

  @Test
  void none_turnsThemOff_andANamedDirectoryIsTheUsers() {
    SparkContext sc = spark.sparkContext();
    assertEquals(new AutoCheckpoints.Choice(null, false), AutoCheckpoints.choose(sc, "none"));
    assertEquals(new AutoCheckpoints.Choice(null, false), AutoCheckpoints.choose(sc, "NONE"));
    assertEquals(new AutoCheckpoints.Choice("hdfs:///runs/a", false), AutoCheckpoints.choose(sc, "hdfs:///runs/a"));
  }

  @Test
  void unset_inLocalMode_aDirectoryOfTheFitsOwnBelowTheTemporaryDirectory_deletedAtItsEnd() throws Exception {
    AutoCheckpoints.Choice a = AutoCheckpoints.choose(spark.sparkContext(), null);
    AutoCheckpoints.Choice b = AutoCheckpoints.choose(spark.sparkContext(), null);
    assertTrue(a.automatic());
    assertFalse(a.dir().equals(b.dir()), "each fit its own");
    Path local = Path.of(new java.net.URI(a.dir()));
    assertEquals(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath(), local.getParent());
    assertTrue(local.getFileName().toString().matches("sparkps-checkpoints-[0-9a-f]{8}"), a.dir());
    Files.createDirectories(local.resolve("ckpt-0000000010"));
    Files.writeString(local.resolve("ckpt-0000000010").resolve("checkpoint.properties"), "step=10");
    AutoCheckpoints.delete(a);
    assertFalse(Files.exists(local), "deleted with the fit");
    AutoCheckpoints.delete(new AutoCheckpoints.Choice(dir.toUri().toString(), false));
    assertTrue(Files.exists(dir), "a directory the user named is never deleted");
  }

  @Test
  void unset_withSparksCheckpointDirectory_belowIt() {
    spark.sparkContext().setCheckpointDir(dir.toUri().toString());
    AutoCheckpoints.Choice c = AutoCheckpoints.choose(spark.sparkContext(), null);
    assertTrue(c.automatic());
    // (Spark makes a directory of its own below the one set, and the fit's goes below that.)
    assertTrue(c.dir().startsWith(dir.toUri().toString().replaceAll("/$", "")) || c.dir().contains(dir.toString()),
        c.dir() + " below " + dir);
    assertNull(AutoCheckpoints.choose(spark.sparkContext(), "none").dir());
  }
}
