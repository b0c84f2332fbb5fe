package io.sparkps.spark;

/**
 * An exception thrown in a remote task, rebuilt in the driver: it carries the remote class name,
 * message and stack trace (and cause chain), whatever classes the driver has.
 */
public final class RemoteException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String remoteClassName;

  /** A remote exception of class {@code remoteClassName}. */
  public RemoteException(String remoteClassName, String message, StackTraceElement[] stack, Throwable cause) {
    super(remoteClassName + (message == null || message.isEmpty() ? "" : ": " + message), cause);
    this.remoteClassName = remoteClassName;
    setStackTrace(stack);
  }

  /** The class of the exception in the remote task, e.g. {@code java.lang.IllegalStateException}. */
  public String remoteClassName() {
    return remoteClassName;
  }

  @Override
  public String toString() {
    return getMessage();
  }
}
