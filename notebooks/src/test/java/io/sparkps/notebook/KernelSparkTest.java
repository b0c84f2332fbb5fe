package io.sparkps.notebook;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.TrainingJob;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The kernel's cells against a real local Spark: displays of Spark values, interrupts of runs. */
class KernelSparkTest {
  private static CellRunner cells;

  @BeforeAll
  static void start() throws Exception {
    PrintStream sink = new PrintStream(new ByteArrayOutputStream());
    cells = new CellRunner(System.getProperty("java.class.path"), SparkPsKernel.STARTUP, sink, sink);
    cells.run("import io.sparkps.spark.*;\nvar spark = Notebook.spark(\"local[4]\");");
  }

  @AfterAll
  static void stop() {
    cells.close();
    Notebook.stopSpark();
  }

  @Test
  void datasetValue_displaysAsATableOfItsFirstRowsWithTheSchema() throws Exception {
    Object value = cells.run("spark.range(25).selectExpr(\"id AS n\", \"id * 0.5 AS half\", \"'<b>' AS tag\")");
    DisplayData d = Displays.render(value);
    String html = (String) d.getData(MIMEType.TEXT_HTML);
    assertTrue(html.contains("<th>n<br><small>bigint</small></th><th>half<br><small>decimal(22,1)</small></th>"), html);
    assertTrue(html.contains("<tr><td>19</td><td>9.5</td><td>&lt;b&gt;</td></tr></tbody>"), "row 20 is the last shown: " + html);
    assertTrue(!html.contains("<td>20</td>"), html);
    assertTrue(html.contains("first 20 rows"), html);
    String text = Displays.text(d);
    assertTrue(text.startsWith("n  | half | tag\n0  | 0.0  | <b>\n"), text);
    assertTrue(text.endsWith("(first 20 rows; n: bigint, half: decimal(22,1), tag: string)"), text);
  }

  @Test
  void interrupt_cancelsTheRunningSparkPsRun_andLeavesNothingRunning() throws Exception {
    cells.run("var job = new TrainingCluster(spark, ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build())\n"
        + "    .runAsync(spark.range(100).toDF(), ctx -> {\n"
        + "      for (long step = 1; ; step++) {\n"
        + "        ctx.progress().report(step, step * 10, Map.of(\"loss\", 1.0 / step));\n"
        + "        Thread.sleep(50);\n"
        + "      }\n"
        + "    });");
    TrainingJob<?> job = (TrainingJob<?>) cells.run("job");
    CompletableFuture<Object> cell = CellRunnerTest.runAsync(cells, "progress(job)");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (job.progress().stream().noneMatch(p -> p.step() >= 3) && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(JobStatus.RUNNING, job.status(), "the workers trained: " + job.progress());
    assertTrue(TrainingJob.running().contains(job));

    Interrupts.interrupt(cells);

    CellException e = assertInstanceOf(CellException.class, cell.get(30, TimeUnit.SECONDS));
    assertEquals("java.lang.InterruptedException", e.errorName());
    while (!job.status().isDone() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(JobStatus.CANCELLED, job.status());
    assertTrue(TrainingJob.running().isEmpty(), "no SparkPS run is left: " + TrainingJob.running());
    SparkSession spark = Notebook.spark();
    while (spark.sparkContext().statusTracker().getActiveJobIds().length > 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(0, spark.sparkContext().statusTracker().getActiveJobIds().length, "no Spark job is left running");
    while (runningTasks(spark) > 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals(0, runningTasks(spark), "no task is left running");
    assertEquals(4L, cells.run("spark.range(4).count()"), "the session works after the interrupt");
  }

  @Test
  void interrupt_cancelsARunningSparkJob_interruptingItsTasks() throws Exception {
    // an RDD job: Spark SQL interrupts its own tasks on cancel, an RDD job's only under a group that asks for it
    CompletableFuture<Object> cell = CellRunnerTest.runAsync(cells,
        "JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(List.of(1, 2, 3, 4), 4).map(n -> {\n"
        + "  Thread.sleep(120_000);\n"
        + "  return n;\n"
        + "}).count()");
    SparkSession spark = Notebook.spark();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (spark.sparkContext().statusTracker().getActiveJobIds().length == 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(1, spark.sparkContext().statusTracker().getActiveJobIds().length, "the cell's job runs");

    Interrupts.interrupt(cells);

    CellException e = assertInstanceOf(CellException.class, cell.get(30, TimeUnit.SECONDS));
    assertEquals("java.lang.InterruptedException", e.errorName(), "the cell's wait for the job ended");
    // each task sleeps 2 minutes in its one row: only an interrupt of its thread ends it sooner
    long cancelled = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while ((runningTasks(spark) > 0 || spark.sparkContext().statusTracker().getActiveJobIds().length > 0)
        && System.nanoTime() < cancelled) {
      Thread.sleep(50);
    }
    assertEquals(0, spark.sparkContext().statusTracker().getActiveJobIds().length, "the job was cancelled");
    assertEquals(0, runningTasks(spark), "and its tasks stopped");
  }

  private static int runningTasks(SparkSession spark) {
    return java.util.Arrays.stream(spark.sparkContext().statusTracker().getExecutorInfos())
        .mapToInt(org.apache.spark.SparkExecutorInfo::numRunningTasks).sum();
  }
}
