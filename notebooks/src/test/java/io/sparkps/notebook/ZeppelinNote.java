package io.sparkps.notebook;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import scala.runtime.AbstractFunction0;
import scala.tools.nsc.Settings;
import scala.tools.nsc.interpreter.IMain;

/**
 * Runs a Zeppelin note (a {@code .zpln}) the way Zeppelin's Spark interpreter does: its
 * {@code %spark} paragraphs in order through Scala's interpreter (2.12 or 2.13, as Spark's) (the engine of that
 * interpreter), class-based wrappers as Spark's REPL uses, with {@code spark} and {@code sc}
 * bound to a local Spark whose executors load the classes the paragraphs define. Its
 * {@code %pyspark} paragraphs run in one Python process joined to the same Spark, as Zeppelin's
 * PySpark interpreter does ({@link PySparkParagraphs}). {@code %md} paragraphs are only read.
 */
final class ZeppelinNote {
  /** One paragraph: its interpreter ({@code spark}, {@code md}), its body, and after a run its output. */
  record Paragraph(String interpreter, String body, String output) {}

  private ZeppelinNote() {}

  /** The paragraphs of a note, interpreter named by the first line ({@code %spark} unless given). */
  static List<Paragraph> read(Path note) throws IOException {
    JsonNode json = new ObjectMapper().readTree(Files.readString(note));
    List<Paragraph> paragraphs = new ArrayList<>();
    for (JsonNode p : json.path("paragraphs")) {
      String text = p.path("text").asText("");
      String interpreter = "spark";
      if (text.startsWith("%")) {
        int nl = text.indexOf('\n');
        interpreter = (nl < 0 ? text : text.substring(0, nl)).substring(1).trim();
        text = nl < 0 ? "" : text.substring(nl + 1);
      }
      paragraphs.add(new Paragraph(interpreter, text, null));
    }
    return paragraphs;
  }

  /**
   * Runs the {@code %spark} and {@code %pyspark} paragraphs in order; returns every paragraph with its output. A
   * paragraph that does not compile or throws stops the note: AssertionError naming the note, the
   * paragraph and its output.
   */
  static List<Paragraph> run(Path note, String master) throws IOException, InterruptedException {
    List<Paragraph> paragraphs = read(note);
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8);
    Settings settings = new Settings();
    settings.processArgumentString("-usejavacp -Yrepl-class-based -deprecation:false");
    IMain repl = newInterpreter(settings, new PrintWriter(out, true));
    ClassLoader before = Thread.currentThread().getContextClassLoader();
    SparkSession spark = null;
    PySparkParagraphs python = null;
    try {
      interpret(repl, out, "1 + 1");  // initializes the compiler and its class loader
      Thread.currentThread().setContextClassLoader(repl.classLoader());
      spark = SparkSession.builder().master(master).appName("zeppelin-note")
          .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false").getOrCreate();
      spark.sparkContext().setLogLevel("WARN");
      repl.bind("spark", "org.apache.spark.sql.SparkSession", spark, noModifiers());
      repl.bind("sc", "org.apache.spark.SparkContext", spark.sparkContext(), noModifiers());
      List<Paragraph> done = new ArrayList<>();
      for (int i = 0; i < paragraphs.size(); i++) {
        Paragraph p = paragraphs.get(i);
        if (p.interpreter().equals("pyspark")) {
          if (python == null) {
            python = PySparkParagraphs.start(spark);
          }
          PySparkParagraphs.Result result = python.run(p.body());
          if (!result.ok()) {
            throw new AssertionError("Zeppelin note " + note.getFileName() + ": %pyspark paragraph " + (i + 1)
                + " raised:\n" + p.body() + "\n------ output ------\n" + result.output());
          }
          done.add(new Paragraph(p.interpreter(), p.body(), result.output()));
          continue;
        }
        if (!p.interpreter().equals("spark")) {
          done.add(p);
          continue;
        }
        buffer.reset();
        String result = interpret(repl, out, p.body());
        String output = buffer.toString(StandardCharsets.UTF_8);
        if (!result.equals("Success")) {
          throw new AssertionError("Zeppelin note " + note.getFileName() + ": paragraph " + (i + 1) + " ended "
              + result + ":\n" + p.body() + "\n------ output ------\n" + output);
        }
        done.add(new Paragraph(p.interpreter(), p.body(), output));
      }
      return done;
    } finally {
      if (python != null) {
        python.close();
      }
      if (spark != null) {
        spark.stop();
      }
      repl.close();
      Thread.currentThread().setContextClassLoader(before);
    }
  }

  /**
   * Scala's interpreter writing to {@code out}. Its constructor differs between Scala versions:
   * 2.12 takes the writer, 2.13 a reporter around it ({@code shell.ReplReporterImpl}).
   */
  private static IMain newInterpreter(Settings settings, PrintWriter out) {
    try {
      Object reporter;
      try {
        reporter = Class.forName("scala.tools.nsc.interpreter.shell.ReplReporterImpl")
            .getConstructor(Settings.class, PrintWriter.class).newInstance(settings, out);
      } catch (ClassNotFoundException scala212) {
        return IMain.class.getConstructor(Settings.class, PrintWriter.class).newInstance(settings, out);
      }
      Class<?> reporterType = Class.forName("scala.tools.nsc.interpreter.ReplReporter");
      return IMain.class.getConstructor(Settings.class, reporterType).newInstance(settings, reporter);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot start Scala's interpreter " + scala.util.Properties.versionString(), e);
    }
  }

  @SuppressWarnings("unchecked")
  private static scala.collection.immutable.List<String> noModifiers() {
    return (scala.collection.immutable.List<String>) (Object) scala.collection.immutable.Nil$.MODULE$;
  }

  /** Interprets {@code code} with Scala's Console (println) writing to {@code out}; "Success", "Error" or "Incomplete". */
  private static String interpret(IMain repl, PrintStream out, String code) {
    return scala.Console$.MODULE$.withOut(out, new AbstractFunction0<String>() {
      @Override
      public String apply() {
        return repl.interpret(code).toString();
      }
    });
  }
}
