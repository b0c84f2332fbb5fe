package io.sparkps.cli;

/** A bad argument the user can fix: the command exits with code 2, this message and the usage. */
final class UsageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  UsageException(String message) {
    super(message);
  }

  UsageException(String message, Throwable cause) {
    super(message, cause);
  }
}
