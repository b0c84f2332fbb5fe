package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.VariableSpec;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a ps says in its log: its lifecycle at INFO (variables and tables created, snapshots saved
 * and restored, a shutdown asked for), refused bulk connections and its own failures at WARN, and
 * every call at DEBUG, each naming the ps.
 */
class ServerLogTest {
  private static final String LOGGER = "io.sparkps.ps";
  @TempDir
  Path dir;
  private final List<LogEvent> events = new CopyOnWriteArrayList<>();
  private AbstractAppender capture;

  @BeforeEach
  void capture() {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    Configuration config = ctx.getConfiguration();
    capture = new AbstractAppender("capture-ps-log", null, null, true, Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent event) {
        events.add(event.toImmutable());
      }
    };
    capture.start();
    LoggerConfig ps = new LoggerConfig(LOGGER, Level.DEBUG, false);
    ps.addAppender(capture, Level.DEBUG, null);
    config.addLogger(LOGGER, ps);
    ctx.updateLoggers();
  }

  @AfterEach
  void release() {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    ctx.getConfiguration().removeLogger(LOGGER);
    ctx.updateLoggers();
    capture.stop();
  }

  private void assertLogged(Level level, Predicate<String> message, String what) {
    List<String> seen = events.stream().map(e -> e.getLevel() + " " + e.getMessage().getFormattedMessage()).toList();
    assertTrue(events.stream().anyMatch(e -> e.getLevel() == level
        && message.test(e.getMessage().getFormattedMessage())), what + " at " + level + " in " + seen);
  }

  @Test
  void lifecycleAtInfo_refusalsAndFailuresAtWarn_callsAtDebug() throws Exception {
    try (TestCluster cluster = TestCluster.netty(1)) {
      PsClient c = cluster.client(0);
      c.create(VariableSpec.builder().setName("w").setShape(16, 4).optInitializer(Initializer.constant(1)).build());
      c.initializeAll();
      String uri = dir.toUri() + "snap";
      c.save(uri);
      c.restore(uri);
      assertLogged(Level.INFO, m -> m.equals("ps 0: created 1 variable slices (64 floats on this ps now)"),
          "the create");
      String at = java.util.regex.Pattern.quote(uri);
      assertLogged(Level.INFO, m -> m.matches("ps 0: saved 1 variables \\(\\d+ bytes\\) to " + at + " in \\d+ ms"),
          "the snapshot");
      assertLogged(Level.INFO, m -> m.matches("ps 0: restored 1 variables \\(\\d+ bytes\\) from " + at), "the restore");
      assertLogged(Level.DEBUG, m -> m.matches("ps 0: Create from /127\\.0\\.0\\.1:\\d+ ended OK in \\d+ ms"),
          "the create call");

      // a snapshot the server cannot write: its own failure, which the caller sees too
      assertThrows(RuntimeException.class, () -> c.save("file:/proc/sparkps-cannot-write-here"));
      assertLogged(Level.WARN, m -> m.startsWith("ps 0: Snapshot from /127.0.0.1:") && m.contains("failed after"),
          "the failed snapshot");

      // a stranger on the bulk port
      ParameterServer ps = cluster.servers.get(0);
      guessToken(ps.bulkPort());
      assertLogged(Level.WARN, m -> m.matches("bulk port \\d+: refused /127\\.0\\.0\\.1:\\d+: a wrong SparkPS token.*"),
          "the refused stranger");
      // a stranger who keeps trying: its refusals within the next seconds are counted, not logged (RefusalLogTest)
      for (int i = 0; i < 20; i++) {
        guessToken(ps.bulkPort());
      }
      assertEquals(1, events.stream().filter(e -> e.getMessage().getFormattedMessage().contains("a wrong SparkPS token"))
          .count(), "one line for the flood of wrong tokens");
    }
  }

  /** A connection to the bulk port with a SparkPS hello and a wrong token, read until the server closes it. */
  private static void guessToken(int port) throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      byte[] guess = "guess".getBytes(StandardCharsets.US_ASCII);
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      out.writeInt(0x53504b42); // "SPKB", the bulk protocol's version 2: refused for the token alone
      out.writeInt(2);
      out.writeInt(guess.length);
      out.write(guess);
      out.flush();
      s.getInputStream().readAllBytes(); // the refusal, then the close
    }
  }
}
