package io.sparkps.spark.recovery;

import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.spec.PsUnavailableException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeoutException;

/**
 * Which failures of a task another attempt may get past. Transient: a peer or the network went
 * away or did not answer in time, the task was killed or interrupted. Everything else (bad data,
 * a bad column, the user's own exception) is deterministic: the same partition and code would
 * fail the same way, so the run fails on the first attempt instead of Spark's retries.
 */
public final class Failures {
  private Failures() {}

  /** Whether {@code t}, or one of its causes, is a failure that another attempt may not meet. */
  public static boolean isTransient(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      if (c instanceof PsUnavailableException || c instanceof PsTimeoutException || c instanceof TimeoutException
          || c instanceof SocketException || c instanceof SocketTimeoutException || c instanceof UnknownHostException
          || c instanceof ClosedChannelException || c instanceof InterruptedException
          || c instanceof CancellationException || c instanceof org.apache.spark.TaskKilledException) {
        return true;
      }
    }
    return false;
  }
}
