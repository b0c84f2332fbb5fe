package io.sparkps.spark;

import java.util.Objects;

/**
 * A run failed: names the role, index, host and stage attempt of the first task that failed,
 * and carries that task's exception (class, message, stack) as its cause.
 * {@link #recreateLocally()} reruns the failed worker's function in the driver.
 */
public final class TrainingFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Reruns one worker's function in this JVM; supplied by the runtime that failed. */
  @FunctionalInterface
  public interface Recreation {
    /** Runs the function; its exception surfaces unwrapped. */
    Object run() throws Exception;
  }

  private final Role role;
  private final int index;
  private final String host;
  private final int attempt;
  private final transient Recreation recreation;

  TrainingFailure(String message, Role role, int index, String host, int attempt, Throwable cause, Recreation recreation) {
    super(message, cause);
    this.role = role;
    this.index = index;
    this.host = host;
    this.attempt = attempt;
    this.recreation = recreation;
  }

  /** The role of the task that failed, or null when no task reported (e.g. a lost executor). */
  public Role role() {
    return role;
  }

  /** Its index within the role (-1 when unknown). */
  public int index() {
    return index;
  }

  /** Its host (null when unknown). */
  public String host() {
    return host;
  }

  /** Its stage attempt (workers) or task attempt. */
  public int attempt() {
    return attempt;
  }

  /** The remote exception, when the task reported one. */
  public RemoteException remote() {
    return getCause() instanceof RemoteException r ? r : null;
  }

  /**
   * Reruns the failed worker's function in this JVM against the same partition (collected to the
   * driver) and fresh in-process parameter servers, so that a debugger can stop at the fault.
   * Returns what the function returns, or throws what it throws.
   */
  public Object recreateLocally() throws Exception {
    if (recreation == null) {
      throw new IllegalStateException("this failure (" + Objects.toString(role, "no task") + ") cannot be recreated"
          + " locally: only a worker function's failure can, in the driver that ran it");
    }
    return recreation.run();
  }
}
