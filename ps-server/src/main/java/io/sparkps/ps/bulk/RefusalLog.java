package io.sparkps.ps.bulk;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Keeps a flood of refused connections (a scanner, a misconfigured client retrying) from flooding
 * the log: at most one line per kind of refusal every {@link #INTERVAL}; the refusals in between
 * are counted, and the next line says how many there were.
 */
final class RefusalLog {
  /** The least time between two lines of one kind. */
  static final Duration INTERVAL = Duration.ofSeconds(10);
  private final LongSupplier nanoClock;
  /** By kind: when its last line was written, and how many refusals were left out since. */
  private final Map<String, long[]> kinds = new HashMap<>();

  RefusalLog(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
  }

  /**
   * Whether a refusal of {@code kind} gets its line now: -1 when not (it is counted), else how
   * many refusals of that kind were left out since its last line.
   */
  synchronized long admit(String kind) {
    long now = nanoClock.getAsLong();
    long[] last = kinds.get(kind);
    if (last == null) {
      kinds.put(kind, new long[] {now, 0});
      return 0;
    }
    if (now - last[0] < INTERVAL.toNanos()) {
      last[1]++;
      return -1;
    }
    long leftOut = last[1];
    last[0] = now;
    last[1] = 0;
    return leftOut;
  }

  /** The end of a line whose kind had {@code leftOut} refusals left out before it. */
  static String since(long leftOut) {
    return leftOut == 0 ? "" : " (" + leftOut + " more refused alike since the last such line, not logged)";
  }
}
