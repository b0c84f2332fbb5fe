package io.sparkps.spark;

import io.sparkps.spark.coord.proto.RemoteError;
import io.sparkps.spark.coord.proto.StackFrame;
import java.util.IdentityHashMap;
import java.util.Map;

/** Converts exceptions to their wire form in a task and back to {@link RemoteException}s in the driver. */
final class RemoteErrors {
  private static final int MAX_DEPTH = 8;

  private RemoteErrors() {}

  static RemoteError toProto(Throwable t) {
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

  static RemoteException fromProto(RemoteError e) {
    StackTraceElement[] stack = new StackTraceElement[e.getFramesCount()];
    for (int i = 0; i < stack.length; i++) {
      StackFrame f = e.getFrames(i);
      stack[i] = new StackTraceElement(f.getClassName(), f.getMethod(), f.getFile().isEmpty() ? null : f.getFile(), f.getLine());
    }
    RemoteException out = new RemoteException(e.getClassName(), e.getMessage(), stack,
        e.hasCause() ? fromProto(e.getCause()) : null);
    e.getSuppressedList().forEach(s -> out.addSuppressed(fromProto(s)));
    return out;
  }

  /** The first worker failure of the latest failed stage attempt, in one line. */
  static String lastAttemptFailure(java.util.List<io.sparkps.spark.coord.proto.FailureReport> failures) {
    int last = failures.stream().filter(f -> f.getRole() != io.sparkps.spark.coord.proto.Role.PS)
        .mapToInt(io.sparkps.spark.coord.proto.FailureReport::getAttempt).max().orElse(0);
    return failures.stream().filter(f -> f.getRole() != io.sparkps.spark.coord.proto.Role.PS && f.getAttempt() == last)
        .findFirst().map(f -> f.getRole().name().toLowerCase() + " " + f.getIndex() + " on " + f.getHost() + " failed: "
            + RemoteErrors.fromProto(f.getError()).getMessage()).orElse("?");
  }
}
