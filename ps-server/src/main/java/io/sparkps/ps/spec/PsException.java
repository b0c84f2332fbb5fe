package io.sparkps.ps.spec;

/** A parameter-server call failed for a reason other than bad input or misuse. */
public class PsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An exception with a message that names the shard and the cause. */
  public PsException(String message, Throwable cause) {
    super(message, cause);
  }
}
