package io.sparkps.spark;

import io.sparkps.spark.coord.proto.Progress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A task's records waiting for the driver, oldest first, at most {@code capacity}: past it the
 * oldest are dropped and counted. Heartbeats {@link #take} a batch and {@link #putBack} one that
 * did not arrive. Thread-safe (a step records while the heartbeat thread takes).
 */
final class PendingRecords {
  private final ArrayDeque<Progress> pending = new ArrayDeque<>();
  private final int capacity;
  private long lastStep = -1;
  private long dropped;

  PendingRecords(int capacity) {
    this.capacity = capacity;
  }

  synchronized void add(Progress p) {
    if (pending.size() >= capacity) {
      pending.pollFirst();
      dropped++;
    }
    pending.addLast(p);
    lastStep = p.getStep();
  }

  /** Adds {@code p} unless it is the step recorded last (or was never reported: no time). */
  synchronized void addUnlessRecorded(Progress p) {
    if (p.getTimeMillis() != 0 && p.getStep() != lastStep) {
      add(p);
    }
  }

  /** The oldest records, at most {@code max}, taken out. */
  synchronized List<Progress> take(int max) {
    List<Progress> out = new ArrayList<>(Math.min(pending.size(), max));
    while (!pending.isEmpty() && out.size() < max) {
      out.add(pending.pollFirst());
    }
    return out;
  }

  /** Puts {@code records} (taken, not delivered) back before the newer ones, as room allows; the rest are dropped. */
  synchronized void putBack(List<Progress> records) {
    for (int i = records.size() - 1; i >= 0; i--) {
      if (pending.size() >= capacity) {
        dropped += i + 1;
        return;
      }
      pending.addFirst(records.get(i));
    }
  }

  synchronized boolean isEmpty() {
    return pending.isEmpty();
  }

  synchronized int size() {
    return pending.size();
  }

  /** Records dropped so far. */
  synchronized long dropped() {
    return dropped;
  }
}
