package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Zeppelin note in {@code notebooks/zeppelin/} runs its {@code %spark} paragraphs in order
 * through Scala's interpreter with {@code spark} and {@code sc} bound, and its {@code %pyspark}
 * ones in a Python joined to the same Spark (see {@link ZeppelinNote}); each note's output is then checked for what it must show, and every
 * {@code %md} paragraph for text.
 */
class ZeppelinNotesIT {
  private static final Path NOTES = Path.of(System.getProperty("sparkps.notebooksDir", ".")).resolve("zeppelin");

  private static String run(String name) throws Exception {
    return run(name, "local[4]");
  }

  private static String run(String name, String master) throws Exception {
    List<ZeppelinNote.Paragraph> paragraphs = ZeppelinNote.run(NOTES.resolve(name + ".zpln"), master);
    for (ZeppelinNote.Paragraph p : paragraphs) {
      if (p.interpreter().equals("md")) {
        assertTrue(!p.body().isBlank(), name + ": an empty %md paragraph");
      } else {
        assertTrue(p.interpreter().equals("spark") || p.interpreter().equals("pyspark"),
            name + ": only %spark, %pyspark and %md paragraphs, not %" + p.interpreter());
      }
    }
    assertTrue(paragraphs.stream().anyMatch(p -> p.interpreter().equals("md")), name + " explains itself");
    return paragraphs.stream().filter(p -> p.output() != null).map(ZeppelinNote.Paragraph::output)
        .collect(Collectors.joining("\n"));
  }

  @Test
  void everyNoteInTheFolder_isCoveredHere() throws Exception {
    try (var files = Files.list(NOTES)) {
      assertEquals(List.of("click-through.zpln", "experiment-on-yarn.zpln", "fashion-mnist.zpln",
          "futures-and-errors.zpln", "parameter-servers.zpln"),
          files.map(p -> p.getFileName().toString()).sorted().toList());
    }
  }

  @Test
  void parameterServers_endsWithTheCounterAtTen() throws Exception {
    String out = run("parameter-servers");
    assertTrue(out.contains("counter = 10.0"), out);
    assertTrue(out.contains("both workers see the same variables: true"), out);
    assertTrue(out.contains("bias[1, 128] shard=1"), out);
    assertTrue(out.contains("WORKER 1: uninitialized before [learning_rate], after [], value 0.5"), out);
  }

  @Test
  void futuresAndErrors_surfacesWorkerOnesFailureAndRecreatesItLocally() throws Exception {
    String out = run("futures-and-errors");
    assertTrue(out.contains("SUCCEEDED: rows per worker [100000, 100000]"), out);
    assertTrue(out.contains("failed task: WORKER 1 on "), out);
    assertTrue(out.contains("its exception: java.lang.IllegalStateException: row "), out);
    assertTrue(out.contains("recreated locally: java.lang.IllegalStateException: row "), out);
    assertTrue(out.contains("after cancel(): CANCELLED"), out);
  }

  @Test
  void clickThrough_trainsEmbeddingTables_andReportsTheAucAsItGoes() throws Exception {
    String out = run("click-through", "local[5]"); // 2 ps, 2 workers and the evaluator
    java.util.regex.Matcher auc = java.util.regex.Pattern.compile(
        "held-out AUC (0\\.\\d+) against the planted model's (0\\.\\d+)").matcher(out);
    assertTrue(auc.find(), out);
    assertTrue(Double.parseDouble(auc.group(1)) > Double.parseDouble(auc.group(2)) - 0.05, auc.group());
    java.util.regex.Matcher evaluations = java.util.regex.Pattern.compile("evaluations during training: (\\d+)")
        .matcher(out);
    assertTrue(evaluations.find() && Integer.parseInt(evaluations.group(1)) >= 2, out);
    assertTrue(out.contains(": AUC 0."), "the AUC at each evaluation: " + out);
  }

  @Test
  void fashionMnist_trainsAbove80Percent() throws Exception {
    String out = run("fashion-mnist");
    java.util.regex.Matcher accuracy = java.util.regex.Pattern.compile("test accuracy (0\\.\\d+)").matcher(out);
    assertTrue(accuracy.find(), out);
    assertTrue(Double.parseDouble(accuracy.group(1)) > 0.8, "accuracy " + accuracy.group(1));
    java.util.regex.Matcher evaluations = java.util.regex.Pattern.compile("evaluations during training: (\\d+)").matcher(out);
    assertTrue(evaluations.find() && Integer.parseInt(evaluations.group(1)) >= 2, out);
    // The %pyspark paragraph, on the views the Scala one made: 30,000 rows a worker, 468 minibatches of 64.
    java.util.regex.Matcher python = java.util.regex.Pattern.compile(
        "from Python: (\\d+) steps a worker, test accuracy (0\\.\\d+)").matcher(out);
    assertTrue(python.find(), out);
    assertEquals(468, Integer.parseInt(python.group(1)), python.group());
    assertTrue(Double.parseDouble(python.group(2)) > 0.8, python.group());
  }

  /** A %pyspark paragraph that raises fails the note with its Python traceback; the paragraphs before it ran. */
  @Test
  void aFailingPysparkParagraph_failsTheTestWithItsTraceback(@TempDir Path dir) throws Exception {
    Path note = dir.resolve("python.zpln");
    Files.writeString(note, "{\"paragraphs\": ["
        + "{\"text\": \"%spark\\nspark.range(3).createOrReplaceTempView(\\\"three\\\")\"}, "
        + "{\"text\": \"%pyspark\\nn = spark.table('three').count()\\nprint('rows', n)\"}, "
        + "{\"text\": \"%pyspark\\nassert n == 4, f'the count is {n}'\"}]}");
    AssertionError e = assertThrows(AssertionError.class, () -> ZeppelinNote.run(note, "local[2]"));
    assertTrue(e.getMessage().contains("%pyspark paragraph 3 raised"), e.getMessage());
    assertTrue(e.getMessage().contains("AssertionError: the count is 3"), e.getMessage());
  }

  @Test
  void experimentOnYarn_dryRunNamesTheQueueAndTheExperimentTrains() throws Exception {
    String out = run("experiment-on-yarn");
    for (String setting : List.of("--master yarn --deploy-mode cluster", "spark.yarn.queue=ml-training",
        "spark.yarn.executor.nodeLabelExpression=gpu", "spark.kerberos.access.hadoopFileSystems=hdfs://namenode2:8020",
        "--files conf/log4j2.properties")) {
      assertTrue(out.contains(setting), setting + " in: " + out);
    }
    assertTrue(out.contains("SUCCEEDED: final evaluation on the held-out rows {"), out);
  }

  @Test
  void aFailingParagraph_failsTheTestNamingTheNoteTheParagraphAndTheError(@TempDir Path dir) throws Exception {
    Path broken = dir.resolve("broken.zpln");
    Files.writeString(broken, "{\"paragraphs\": [{\"text\": \"%md\\n# A note that fails\"}, "
        + "{\"text\": \"%spark\\nval ok = spark.range(3).count()\"}, "
        + "{\"text\": \"%spark\\nrequire(ok == 4, \\\"the count is off\\\")\"}]}");
    AssertionError e = assertThrows(AssertionError.class, () -> ZeppelinNote.run(broken, "local[2]"));
    assertTrue(e.getMessage().startsWith("Zeppelin note broken.zpln: paragraph 3 ended Error:"), e.getMessage());
    assertTrue(e.getMessage().contains("require(ok == 4"), "names the paragraph's code: " + e.getMessage());
    assertTrue(e.getMessage().contains("java.lang.IllegalArgumentException: requirement failed: the count is off"),
        "names the error: " + e.getMessage());
  }
}
