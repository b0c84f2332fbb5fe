package io.sparkps.ps.spec;

/** A bounded wait ended before its condition held; the message says what was awaited from whom. */
public final class PsTimeoutException extends PsException {
  private static final long serialVersionUID = 1L;

  /** An exception whose message names what was awaited and from whom. */
  public PsTimeoutException(String message, Throwable cause) {
    super(message, cause);
  }
}
