package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;

/**
 * Every notebook in {@code notebooks/} runs top to bottom through real Jupyter
 * ({@code jupyter nbconvert --execute}) on the installed Java (SparkPS) kernel, unchanged; a
 * failing cell fails the test with the notebook, the cell and the error. Then the executed
 * notebook (in {@code target/executed-notebooks/}) is read for what it must show.
 */
class NotebooksIT {
  private static final Path NOTEBOOKS = Path.of(System.getProperty("sparkps.notebooksDir", "."));
  private static final Path EXECUTED = Jupyter.TARGET.resolve("executed-notebooks");

  @BeforeAll
  static void install() throws Exception {
    Jupyter.installKernel();
    Files.createDirectories(EXECUTED);
  }

  @Test
  void everyNotebookInTheFolder_isCoveredHere() throws Exception {
    try (var files = Files.list(NOTEBOOKS)) {
      List<String> names = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".ipynb")).sorted().toList();
      assertEquals(List.of("click-through.ipynb", "experiment-on-yarn.ipynb", "fashion-mnist.ipynb",
          "futures-and-errors.ipynb", "parameter-servers.ipynb"), names);
    }
  }

  @Test
  void parameterServers_endsWithTheCounterAtTen() throws Exception {
    Executed nb = execute("parameter-servers");
    assertTrue(nb.text().contains("counter = 10.0"), nb.text());
    assertTrue(nb.text().contains("[10.0, 10.0]"), "both workers read 10: " + nb.text());
    assertTrue(nb.text().contains("both workers see the same variables: true"), nb.text());
    assertTrue(nb.text().contains("weights[1024, 128] shard=0 rows=[0,512)")
        && nb.text().contains("weights[1024, 128] shard=1 rows=[512,1024)"), "weights split over both ps: " + nb.text());
    assertTrue(nb.text().contains("bias[1, 128] shard=1"), "bias pinned to ps 1: " + nb.text());
    assertTrue(nb.text().contains("WORKER 1: uninitialized before [learning_rate], after [], value 0.5"), nb.text());
    Matcher sums = Pattern.compile("(CHIEF 0|WORKER 1): params \\[0_W, 0_b, 1_W, 1_b\\], sum (\\S+)").matcher(nb.text());
    List<String> found = new ArrayList<>();
    while (sums.find()) {
      found.add(sums.group(2));
    }
    assertEquals(2, found.size(), nb.text());
    assertEquals(found.get(0), found.get(1), "both replicas start from the chief's values");
  }

  @Test
  void futuresAndErrors_surfacesWorkerOnesFailureAndRecreatesItLocally() throws Exception {
    Executed nb = execute("futures-and-errors");
    assertTrue(nb.text().contains("rows per worker: [100000, 100000], in all 200000"), nb.text());
    assertTrue(Pattern.compile("SparkPS run \\w+: SUCCEEDED, [\\d.]+ s, \\d+ examples/s\n  chief 0 @ 127.0.0.1: step 10, "
        + "100000 examples, loss 0.1000").matcher(nb.text()).find(), "progress(job) ended on the run's last report: " + nb.text());
    JsonNode remote = nb.errors().get(0);
    assertEquals("TrainingFailure", remote.get("ename").asText());
    assertTrue(remote.get("evalue").asText().startsWith("worker 1 on "), remote.toString());
    String traceback = remote.get("traceback").toString();
    assertTrue(traceback.contains("Caused by: java.lang.IllegalStateException: row "), traceback);
    assertTrue(traceback.contains("has a label out of range"), traceback);
    assertTrue(nb.text().contains("failed task: WORKER 1 on "), nb.text());
    JsonNode local = nb.errors().get(1);
    assertEquals("IllegalStateException", local.get("ename").asText(), "recreated locally: " + local);
    assertTrue(local.get("traceback").toString().contains("(in a lambda): throw new IllegalStateException"), local.toString());
    assertEquals(2, nb.errors().size(), "only the two cells that fail on purpose fail");
    assertTrue(nb.text().contains("ticks[] shard=0"), "inspect() shows the running job's variables: " + nb.text());
    assertTrue(nb.text().contains("CANCELLED"), nb.text());
  }

  @Test
  void fashionMnist_trainsAbove80PercentAndChartsItsTraining() throws Exception {
    Executed nb = execute("fashion-mnist");
    Matcher accuracy = Pattern.compile("test accuracy (0\\.\\d+)").matcher(nb.text());
    assertTrue(accuracy.find(), nb.text());
    assertTrue(Double.parseDouble(accuracy.group(1)) > 0.8, "accuracy " + accuracy.group(1));
    Matcher evaluations = Pattern.compile("evaluations during training: (\\d+)").matcher(nb.text());
    assertTrue(evaluations.find() && Integer.parseInt(evaluations.group(1)) >= 2, nb.text());
    assertEquals(2, nb.count("image/png"), "the loss and accuracy charts");
    assertTrue(nb.text().contains("SparkPS Fashion-MNIST: SUCCEEDED"), "the live display's last state: " + nb.text());
    assertTrue(nb.text().contains("<th>predictedItem<br><small>string</small></th>"), "predictions as a table");
  }

  @Test
  void clickThrough_trainsEmbeddingTables_showsTheAucAsItGoes_andNearsThePlantedOne() throws Exception {
    Executed nb = execute("click-through");
    Matcher auc = Pattern.compile("held-out AUC (0\\.\\d+) against the planted model's (0\\.\\d+)").matcher(nb.text());
    assertTrue(auc.find(), nb.text());
    double reached = Double.parseDouble(auc.group(1));
    assertTrue(reached > Double.parseDouble(auc.group(2)) - 0.05, auc.group());
    Matcher evaluations = Pattern.compile("evaluations during training: (\\d+), last: \\{.*auc=(0\\.\\d+)")
        .matcher(nb.text());
    assertTrue(evaluations.find() && Integer.parseInt(evaluations.group(1)) >= 2, nb.text());
    assertTrue(nb.text().contains(String.format("the loaded model: AUC %.4f", reached)), "the saved model scores alike: "
        + nb.text());
    assertEquals(1, nb.count("image/png"), "the AUC chart");
    assertTrue(nb.errors().isEmpty(), nb.errors().toString());
  }

  @Test
  void experimentOnYarn_dryRunNamesTheQueueAndTheExperimentTrains() throws Exception {
    Executed nb = execute("experiment-on-yarn");
    for (String setting : List.of("--master yarn --deploy-mode cluster", "spark.yarn.queue=ml-training",
        "spark.yarn.executor.nodeLabelExpression=gpu", "spark.executor.instances=4",
        "spark.executorEnv.DATA_VERSION=2026-11", "spark.kerberos.access.hadoopFileSystems=hdfs://namenode2:8020",
        "--files conf/log4j2.properties", "run-experiment --experiment")) {
      assertTrue(nb.text().contains(setting), setting + " in: " + nb.text());
    }
    assertTrue(nb.text().contains("# ps asked for 2048 MiB"), nb.text());
    assertTrue(nb.text().contains("SUCCEEDED"), nb.text());
    assertTrue(nb.text().contains("final evaluation on the held-out rows: {"), nb.text());
  }

  /** An executed notebook: its outputs' text (streams and text/plain, text/html), its errors. */
  record Executed(String text, List<JsonNode> errors, String json) {
    int count(String needle) {
      return json.split(Pattern.quote(needle), -1).length - 1;
    }
  }

  @Test
  void aFailingCell_failsTheTestNamingTheNotebookTheCellAndTheError(@TempDir Path dir) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode nb = json.createObjectNode().put("nbformat", 4).put("nbformat_minor", 5);
    nb.putObject("metadata").putObject("kernelspec").put("name", "sparkps").put("display_name", "Java (SparkPS)");
    ArrayNode cells = nb.putArray("cells");
    for (String code : List.of("int ok = 1;", "Object nothing = null;\nnothing.hashCode();")) {
      ObjectNode cell = cells.addObject().put("cell_type", "code").put("source", code).put("id", "c" + cells.size());
      cell.putObject("metadata");
      cell.putArray("outputs");
      cell.putNull("execution_count");
    }
    Path broken = dir.resolve("broken.ipynb");
    Files.writeString(broken, json.writeValueAsString(nb));
    AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> execute(broken));
    assertTrue(e.getMessage().startsWith("notebook " + broken + " failed"), e.getMessage());
    assertTrue(e.getMessage().contains("nothing.hashCode();"), "names the cell: " + e.getMessage());
    assertTrue(e.getMessage().contains("NullPointerException"), "names the error: " + e.getMessage());
    assertTrue(e.getMessage().contains("at line 2: nothing.hashCode();"), "and its line: " + e.getMessage());
  }

  private static Executed execute(String name) throws Exception {
    return execute(NOTEBOOKS.resolve(name + ".ipynb"));
  }

  private static Executed execute(Path notebook) throws Exception {
    String name = notebook.getFileName().toString().replace(".ipynb", "");
    Jupyter.Run run = Jupyter.run(List.of(Jupyter.JUPYTER.toString(), "nbconvert", "--to", "notebook", "--execute",
        "--ExecutePreprocessor.kernel_name=sparkps", "--ExecutePreprocessor.timeout=600",
        "--output-dir", EXECUTED.toString(), notebook.toString()), Jupyter.env(), 900);
    if (run.exitCode() != 0) {
      int cell = run.output().indexOf("An error occurred while executing the following cell");
      fail("notebook " + notebook + " failed (nbconvert exit " + run.exitCode() + "): "
          + (cell >= 0 ? run.output().substring(cell) : run.output()));
    }
    String json = Files.readString(EXECUTED.resolve(name + ".ipynb"));
    StringBuilder text = new StringBuilder();
    List<JsonNode> errors = new ArrayList<>();
    for (JsonNode cell : new ObjectMapper().readTree(json).get("cells")) {
      for (JsonNode out : cell.path("outputs")) {
        if ("error".equals(out.path("output_type").asText())) {
          errors.add(out);
        }
        join(text, out.path("text"));
        join(text, out.path("data").path("text/plain"));
        join(text, out.path("data").path("text/html"));
      }
    }
    return new Executed(text.toString(), errors, json);
  }

  private static void join(StringBuilder text, JsonNode lines) {
    if (lines.isArray()) {
      lines.forEach(l -> text.append(l.asText()));
      text.append('\n');
    } else if (lines.isTextual()) {
      text.append(lines.asText()).append('\n');
    }
  }
}
