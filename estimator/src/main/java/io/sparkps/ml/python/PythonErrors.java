package io.sparkps.ml.python;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.spark.RemoteException;
import io.sparkps.spark.TrainingFailure;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeoutException;

/**
 * A JVM failure as the Python package raises it: its kind (which Python exception), SparkPS's
 * message, the failed task's role, index, host and attempt when a task failed, and the Java
 * stack, read in one call instead of a Py4J error's wall of text.
 */
public final class PythonErrors {
  private static final ObjectMapper JSON = new ObjectMapper();

  private PythonErrors() {}

  /**
   * JSON {"kind", "message", "javaClass", "stack", and for a task's failure "role", "index",
   * "host", "attempt", "remoteClass"}. Kinds: "training" (a run failed), "invalid" (bad input:
   * {@link IllegalArgumentException}), "cancelled", "timeout", "state" ({@link IllegalStateException})
   * and "other".
   */
  public static String describe(Throwable t) {
    Map<String, Object> d = new LinkedHashMap<>();
    TrainingFailure failure = find(t, TrainingFailure.class);
    Throwable shown = failure != null ? failure : t;
    d.put("kind", kind(t, failure));
    d.put("message", shown.getMessage() == null ? shown.getClass().getName() : shown.getMessage());
    d.put("javaClass", shown.getClass().getName());
    if (failure != null) {
      d.put("role", failure.role() == null ? null : failure.role().name());
      d.put("index", failure.index());
      d.put("host", failure.host());
      d.put("attempt", failure.attempt());
      RemoteException remote = failure.remote();
      d.put("remoteClass", remote == null ? null : remote.remoteClassName());
    }
    StringWriter stack = new StringWriter();
    t.printStackTrace(new PrintWriter(stack));
    d.put("stack", stack.toString());
    try {
      return JSON.writeValueAsString(d);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String kind(Throwable t, TrainingFailure failure) {
    if (failure != null) {
      return "training";
    } else if (find(t, CancellationException.class) != null) {
      return "cancelled";
    } else if (find(t, TimeoutException.class) != null) {
      return "timeout";
    } else if (t instanceof IllegalArgumentException) {
      return "invalid";
    } else if (t instanceof IllegalStateException) {
      return "state";
    }
    return "other";
  }

  private static <T extends Throwable> T find(Throwable t, Class<T> type) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (type.isInstance(c)) {
        return type.cast(c);
      }
    }
    return null;
  }
}
