package io.sparkps.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/** The session a command runs in: the one the process has, unless that one was stopped. */
class SessionsTest {
  @Test
  void aStoppedSession_isNotTheCommands_aLiveOneIs() {
    SparkSession first = io.sparkps.ml.LocalSpark.start(2, "sessions");
    try {
      assertSame(first, Sessions.get(null, Map.of(), 1), "the process's own session");
    } finally {
      first.stop();
    }
    SparkSession next = Sessions.get(null, Map.of(), 1);
    try {
      assertNotSame(first, next);
      assertFalse(next.sparkContext().isStopped());
      assertEquals(2L, next.range(2).count(), "it runs jobs");
    } finally {
      Sessions.stopEmbedded();
      next.stop();
    }
  }
}
