package io.sparkps.ps.wire;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.spec.EmbeddingTableFullException;
import io.sparkps.ps.spec.PsAuthenticationException;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.wire.PsError;

/** The one place where gRPC statuses and SparkPS exceptions are translated, both ways. */
@Internal
public final class StatusMapping {
  private StatusMapping() {}

  /** The status a server returns for an error. */
  public static Status toStatus(Throwable t) {
    if (t instanceof PsError e) {
      Status s = switch (e.kind()) {
        case NOT_FOUND -> Status.NOT_FOUND;
        case INVALID -> Status.INVALID_ARGUMENT;
        case CONFLICT -> Status.ALREADY_EXISTS;
        case PRECONDITION -> Status.FAILED_PRECONDITION;
        case TIMEOUT -> Status.DEADLINE_EXCEEDED;
        case UNAVAILABLE -> Status.UNAVAILABLE;
        case INTERNAL -> Status.INTERNAL;
      };
      return s.withDescription(e.getMessage());
    }
    if (t instanceof StatusRuntimeException sre) {
      return sre.getStatus();
    }
    if (t instanceof EmbeddingTableFullException) {
      return Status.RESOURCE_EXHAUSTED.withDescription(t.getMessage());
    }
    return Status.INTERNAL.withDescription(t.getClass().getName() + ": " + t.getMessage()).withCause(t);
  }

  /**
   * The exception a client throws for a failed call to {@code shard}: bad input and misuse as
   * {@link IllegalArgumentException}/{@link IllegalStateException}, the rest as {@link PsException}s.
   */
  public static RuntimeException toException(Throwable t, String shard, String operation) {
    Status s = Status.fromThrowable(t);
    String message = shard + ": " + operation + " failed: " + (s.getDescription() == null ? s.getCode() : s.getDescription());
    return switch (s.getCode()) {
      case INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, OUT_OF_RANGE -> new IllegalArgumentException(message, t);
      case FAILED_PRECONDITION -> new IllegalStateException(message, t);
      // gRPC's own RESOURCE_EXHAUSTED (a message over the size limit) stays a PsException.
      case RESOURCE_EXHAUSTED -> s.getDescription() != null && s.getDescription().startsWith("embedding table '")
          ? new EmbeddingTableFullException(message, t) : new PsException(message, t);
      case UNAUTHENTICATED, PERMISSION_DENIED -> new PsAuthenticationException(message, t);
      case DEADLINE_EXCEEDED -> new PsTimeoutException(message, t);
      case UNAVAILABLE -> new PsUnavailableException(shard + ": " + operation
          + " failed: the parameter server is unreachable (" + s.getDescription()
          + "); is it running and is the address right?", t);
      default -> new PsException(message, t);
    };
  }
}
