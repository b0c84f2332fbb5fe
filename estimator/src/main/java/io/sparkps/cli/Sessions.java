package io.sparkps.cli;

import java.util.Map;
import org.apache.spark.sql.SparkSession;

/**
 * The Spark session of a command: under {@code spark-submit} (or wherever a session or a master
 * is configured already) the one given; otherwise an embedded {@code local[N]} Spark sized to the
 * machine and the run, which {@link SparkPsCli#main} stops at the end.
 */
final class Sessions {
  private static volatile SparkSession embedded;

  private Sessions() {}

  /** Whether this JVM was started by {@code spark-submit} (which sets {@code spark.master}). */
  static boolean submitted() {
    return System.getProperty("spark.master") != null;
  }

  /**
   * The session: {@code master} when given; the configured one under spark-submit; else
   * {@code local[max(cores, tasks)]} so that every role of the run gets a task slot.
   */
  static SparkSession get(String master, Map<String, String> conf, int tasks) {
    // A session whose context was stopped (a notebook's, before it ran the command) is none.
    SparkSession active = live(SparkSession.getActiveSession());
    if (active == null) {
      active = live(SparkSession.getDefaultSession());
    }
    if (active != null && master == null) {
      return active;
    }
    SparkSession.Builder b = SparkSession.builder().appName("sparkps");
    boolean embed = master == null && !submitted();
    if (master != null) {
      b.master(master);
    } else if (embed) {
      b.master("local[" + Math.max(Runtime.getRuntime().availableProcessors(), tasks) + "]")
          .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1");
    }
    conf.forEach(b::config);
    SparkSession session = b.getOrCreate();
    session.sparkContext().setLogLevel(io.sparkps.spark.SparkPsConf.CLI_LOG_LEVEL.get(session.conf()));
    if (embed) {
      embedded = session;
    }
    return session;
  }

  private static SparkSession live(scala.Option<SparkSession> session) {
    return session.isDefined() && !session.get().sparkContext().isStopped() ? session.get() : null;
  }

  /** Stops the embedded session, if this process made one. */
  static void stopEmbedded() {
    SparkSession s = embedded;
    if (s != null) {
      embedded = null;
      s.stop();
    }
  }
}
