package io.sparkps.cli;

import io.sparkps.spark.TrainingFailure;
import org.apache.spark.sql.SparkSession;
import java.io.PrintStream;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code sparkps} command line. {@link #main} exits the process when done (a barrier stage in
 * local mode leaves a non-daemon thread behind); {@link #run} returns the exit code instead.
 */
@Command(name = "sparkps", mixinStandardHelpOptions = true, versionProvider = Versions.class,
    description = "Train Deeplearning4j networks on Spark with sharded parameter servers.",
    subcommands = {TrainCommand.class, EvaluateCommand.class, PredictCommand.class, InspectCommand.class,
        DemoCommand.class, RunExperimentCommand.class, GenerateCommand.class})
public final class SparkPsCli implements Runnable {
  /** Success. */
  public static final int OK = 0;
  /** Training (or another step of the command) failed. */
  public static final int FAILED = 1;
  /** Bad arguments: unknown flag, missing data, unknown column, unreadable config. */
  public static final int USAGE = 2;

  /** Where the commands print (standard output, or what {@link #run} was given). */
  static volatile PrintStream OUT = System.out;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(new CommandLine(this), "a command is missing: train, evaluate, "
        + "predict, inspect, demo or generate");
  }

  /** Runs the command line and exits the JVM with its code. */
  public static void main(String[] args) {
    try {
      Class.forName("org.apache.spark.sql.SparkSession", false, SparkPsCli.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      System.err.println("sparkps: Spark is not on the class path. Run it with spark-submit --class "
          + SparkPsCli.class.getName() + " <this jar> ..., or java <Spark's --add-opens> -cp "
          + "\"<this jar>:$SPARK_HOME/jars/*\" " + SparkPsCli.class.getName() + " ...");
      System.exit(USAGE);
    }
    if (!Sessions.submitted() && System.getProperty("log4j2.configurationFile") == null) {
      // On an embedded Spark: warnings only, before anything logs (spark-submit brings its own).
      System.setProperty("log4j2.configurationFile", "classpath:io/sparkps/cli/log4j2-cli.properties");
    }
    // What the command says on stderr is kept (its first 16 KiB): in cluster mode it goes into the
    // failure YARN records as the application's diagnostics.
    java.io.ByteArrayOutputStream said = new java.io.ByteArrayOutputStream();
    PrintStream err = new PrintStream(new java.io.FilterOutputStream(System.err) {
      @Override
      public void write(int b) throws java.io.IOException {
        out.write(b);
        if (said.size() < 16384) {
          said.write(b);
        }
      }
    }, true, java.nio.charset.StandardCharsets.UTF_8);
    int code = run(args, System.out, err);
    Sessions.stopEmbedded();
    System.out.flush();
    System.err.flush();
    if ("cluster".equals(System.getProperty("spark.submit.deployMode"))) {
      // In YARN's application master: returning (or throwing) lets Spark report the final status;
      // System.exit would end the master before it does.
      if (code != OK) {
        String reason = said.toString(java.nio.charset.StandardCharsets.UTF_8).lines()
            .filter(l -> l.startsWith("sparkps")).findFirst().orElse("(see the driver's log)");
        throw new IllegalStateException("sparkps " + (args.length > 0 ? args[0] : "") + " failed with exit code "
            + code + ": " + reason);
      }
      return;
    }
    if (code != OK && Sessions.submitted() && SparkSession.getActiveSession().isDefined()) {
      // Client mode: the application's final status in YARN says the run failed.
      SparkSession.getActiveSession().get().sparkContext().stop(code);
    }
    System.exit(code);
  }

  /** Runs the command line and returns its exit code. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    OUT = out;
    CommandLine cl = new CommandLine(new SparkPsCli());
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    cl.setParameterExceptionHandler((e, ignored) -> {
      err.println("sparkps: " + e.getMessage());
      e.getCommandLine().usage(err);
      return USAGE;
    });
    cl.setExecutionExceptionHandler((e, command, parsed) -> {
      if (e instanceof UsageException || e instanceof IllegalArgumentException) {
        err.println("sparkps " + command.getCommandName() + ": " + firstLine(e.getMessage()));
        command.usage(err);
        return USAGE;
      }
      long step = e instanceof TrainingRun.Failed failed ? failed.lastStep : -1;
      String record = e instanceof TrainingRun.Failed failed ? failed.record : null;
      if (e instanceof TrainingRun.Failed failed) {
        e = failed.failure;
      }
      if (e instanceof TrainingFailure f) {
        err.println("sparkps " + command.getCommandName() + ": training failed: " + firstLine(f.getMessage())
            + (step < 0 ? "" : " (its last reported step: " + step + ")"));
        if (f.getCause() != null) {
          err.println("  cause: " + firstLine(String.valueOf(rootCause(f))));
        }
        if (record != null) {
          err.println("  the run's record: " + record);
        }
        return FAILED;
      }
      err.println("sparkps " + command.getCommandName() + ": " + firstLine(String.valueOf(e)));
      Throwable root = rootCause(e);
      if (root != e) {
        err.println("  cause: " + firstLine(String.valueOf(root)));
      }
      return FAILED;
    });
    return cl.execute(args);
  }

  static String firstLine(String s) {
    if (s == null) {
      return "(no message)";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  private static Throwable rootCause(Throwable t) {
    Throwable r = t;
    while (r.getCause() != null && r.getCause() != r) {
      r = r.getCause();
    }
    return r;
  }
}
