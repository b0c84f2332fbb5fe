package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.RemoteError;
import io.sparkps.spark.coord.proto.StackFrame;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * An exception in its wire form ({@link RemoteError}: class, message, stack, causes and suppressed
 * exceptions, up to {@value #MAX_DEPTH} deep), as a task or the driver's supervisor reports it to
 * the registry.
 */
public final class WireErrors {
  private static final int MAX_DEPTH = 8;

  private WireErrors() {}

  /** {@code t} in its wire form. */
  public static RemoteError toProto(Throwable t) {
    return toProto(t, 0, new IdentityHashMap<>());
  }

  private static RemoteError toProto(Throwable t, int depth, Map<Throwable, Boolean> seen) {
    seen.put(t, true);
    RemoteError.Builder b = RemoteError.newBuilder().setClassName(t.getClass().getName())
        .setMessage(t.getMessage() == null ? "" : t.getMessage());
    for (StackTraceElement e : t.getStackTrace()) {
      b.addFrames(StackFrame.newBuilder().setClassName(e.getClassName()).setMethod(e.getMethodName())
          .setFile(e.getFileName() == null ? "" : e.getFileName()).setLine(e.getLineNumber()));
    }
    Throwable cause = t.getCause();
    if (cause != null && depth < MAX_DEPTH && !seen.containsKey(cause)) {
      b.setCause(toProto(cause, depth + 1, seen));
    }
    for (Throwable s : t.getSuppressed()) {
      if (depth < MAX_DEPTH && !seen.containsKey(s)) {
        b.addSuppressed(toProto(s, depth + 1, seen));
      }
    }
    return b.build();
  }
}
