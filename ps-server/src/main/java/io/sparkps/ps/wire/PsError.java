package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;

/** A request a shard refuses, with the kind of refusal and a message for the user. */
@Internal
public final class PsError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why the request was refused; the transport maps each kind to a status code. */
  public enum Kind { NOT_FOUND, INVALID, CONFLICT, PRECONDITION, TIMEOUT, UNAVAILABLE, INTERNAL }

  private final Kind kind;

  PsError(Kind kind, String message) {
    super(message);
    this.kind = kind;
  }

  PsError(Kind kind, String message, Throwable cause) {
    super(message, cause);
    this.kind = kind;
  }

  /** Why the request was refused. */
  public Kind kind() {
    return kind;
  }

  public static PsError notFound(String message) {
    return new PsError(Kind.NOT_FOUND, message);
  }

  public static PsError invalid(String message) {
    return new PsError(Kind.INVALID, message);
  }

  public static PsError conflict(String message) {
    return new PsError(Kind.CONFLICT, message);
  }

  public static PsError precondition(String message) {
    return new PsError(Kind.PRECONDITION, message);
  }

  /** A bounded wait that ended before what it waited for came. */
  public static PsError timeout(String message) {
    return new PsError(Kind.TIMEOUT, message);
  }

  /** The shard cannot serve the request now (it is stopping). */
  public static PsError unavailable(String message) {
    return new PsError(Kind.UNAVAILABLE, message);
  }
}
