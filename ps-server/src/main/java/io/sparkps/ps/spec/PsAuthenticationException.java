package io.sparkps.ps.spec;

/** A parameter server rejected a call because it carried no token or the wrong one. */
public final class PsAuthenticationException extends PsException {
  private static final long serialVersionUID = 1L;

  /** An exception with a message that names the shard. */
  public PsAuthenticationException(String message, Throwable cause) {
    super(message, cause);
  }
}
