package io.sparkps.ps.spec;

/** A parameter server could not be reached (not started, stopped, or the network failed). */
public final class PsUnavailableException extends PsException {
  private static final long serialVersionUID = 1L;

  /** An exception whose message names the unreachable shard and its address. */
  public PsUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
