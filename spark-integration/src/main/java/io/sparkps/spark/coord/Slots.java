package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;

/**
 * Which registrations the coordinator accepts: only for the slots the run has (ps 0..P-1, the
 * chief, workers 0..N-1, the evaluator), with a sane host, port and executor id; and never for a
 * live slot that another task holds. A slot changes hands only to a later attempt (Spark's retry
 * of a task, the supervisor's relaunch of a lost ps, a retried stage), or once its ps was
 * declared lost.
 */
final class Slots {
  /** Longest host name or executor id taken. */
  static final int MAX_NAME = 255;

  private Slots() {}

  /** Throws IllegalArgumentException for a slot the run lacks or a malformed field. */
  static void checkExists(Registration r, int numPs, int numWorkers) {
    int slots = switch (r.getRole()) {
      case PS -> numPs;
      case WORKER -> numWorkers;
      case CHIEF, EVALUATOR -> 1;
      default -> 0;
    };
    if (r.getIndex() < 0 || r.getIndex() >= slots) {
      throw new IllegalArgumentException("no slot " + name(r.getRole(), r.getIndex()) + " in this run (" + numPs
          + " ps, " + numWorkers + " workers): a task of another run, or of another cluster spec, is registering");
    }
    if (r.getPort() < 0 || r.getPort() > 65535) {
      throw new IllegalArgumentException("port " + r.getPort() + " of " + name(r.getRole(), r.getIndex())
          + " is not in 0..65535");
    }
    if (r.getHost().length() > MAX_NAME || r.getExecutorId().length() > MAX_NAME) {
      throw new IllegalArgumentException("host or executor id of " + name(r.getRole(), r.getIndex()) + " is longer than "
          + MAX_NAME + " characters");
    }
  }

  /**
   * Throws IllegalStateException when {@code holder} (live, not lost) keeps the slot against
   * {@code r}: another task of the same or an earlier attempt.
   */
  static void checkFree(Registration r, Member holder, boolean holderLost) {
    if (holder == null || holder.taskId() == r.getTaskId() || r.getAttempt() > holder.attempt() || holderLost) {
      return;
    }
    throw new IllegalStateException(name(r.getRole(), r.getIndex()) + " is held by task " + holder.taskId() + " at "
        + holder.address() + " (attempt " + holder.attempt() + "); task " + r.getTaskId() + " of attempt "
        + r.getAttempt() + " may not take it over: only a later attempt or a replacement of a lost ps registers there");
  }

  /** A registration of a ps launch the driver replaced: the task is to end quietly, its job was cancelled. */
  static final class Superseded extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    Superseded(String message) {
      super(message);
    }
  }

  /** Throws {@link Superseded} for a ps registration of a launch the driver replaced by a later one. */
  static void checkCurrentLaunch(Registration r, int firstAttempt) {
    if (r.getAttempt() < firstAttempt) {
      throw new Superseded(name(r.getRole(), r.getIndex()) + " attempt " + r.getAttempt() + " (task "
          + r.getTaskId() + ") belongs to a launch the driver replaced: only attempts from " + firstAttempt
          + " on may register; this task's job was cancelled and it ends");
    }
  }

  static String name(Role role, int index) {
    return role.name().toLowerCase(java.util.Locale.ROOT) + " " + index;
  }
}
