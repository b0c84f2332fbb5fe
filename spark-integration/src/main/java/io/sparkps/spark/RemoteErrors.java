package io.sparkps.spark;

import io.sparkps.spark.coord.proto.RemoteError;
import io.sparkps.spark.coord.proto.StackFrame;

/** Rebuilds exceptions from their wire form ({@link io.sparkps.spark.coord.WireErrors}) as {@link RemoteException}s in the driver. */
final class RemoteErrors {
  private RemoteErrors() {}

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
