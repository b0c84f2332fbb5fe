package io.sparkps.spark.coord;

import io.sparkps.spark.coord.proto.Role;
import java.util.ArrayList;
import java.util.List;

/**
 * The records of a run's progress as the driver received them, each numbered in arrival order.
 * Bounded: when it holds {@code capacity} records, every other worker step of its older half is
 * dropped (the curve keeps its shape at half the resolution there; the evaluator's reports and
 * messages are kept). Readers that follow it live ({@link #since}) see every record, thinned or
 * not, as long as they keep within the newer half. Not thread-safe: the registry guards it.
 */
public final class History {
  /** A record and its number. */
  public record Entry(long seq, Member member) {}

  private final int capacity;
  private final ArrayList<Entry> entries = new ArrayList<>();
  private long next;
  private long thinned;

  History(int capacity) {
    if (capacity < 4) {
      throw new IllegalArgumentException("a history holds at least 4 records, not " + capacity);
    }
    this.capacity = capacity;
  }

  void add(Member m) {
    if (entries.size() >= capacity) {
      thin();
    }
    entries.add(new Entry(next++, m));
  }

  /** Drops every other worker step of the older half (never the evaluator's reports or a message's change). */
  private void thin() {
    int half = entries.size() / 2;
    List<Entry> kept = new ArrayList<>(entries.size());
    boolean drop = false;
    for (int i = 0; i < entries.size(); i++) {
      Entry e = entries.get(i);
      if (i < half && isWorkerStep(e.member())) {
        if (drop) {
          thinned++;
          drop = false;
          continue;
        }
        drop = true;
      }
      kept.add(e);
    }
    if (kept.size() == entries.size()) {
      // nothing a thinning may drop: the oldest record goes
      kept.remove(0);
      thinned++;
    }
    entries.clear();
    entries.addAll(kept);
  }

  private static boolean isWorkerStep(Member m) {
    return (m.role() == Role.CHIEF || m.role() == Role.WORKER) && m.progress().getMetricsCount() > 0;
  }

  /** The number the next record will get: what a reader that has everything so far asks for next. */
  long nextSeq() {
    return next;
  }

  /** Records numbered {@code from} and later still held, oldest first. */
  List<Entry> since(long from) {
    int lo = 0;
    int hi = entries.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (entries.get(mid).seq() < from) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return List.copyOf(entries.subList(lo, entries.size()));
  }

  /** Every record held, oldest first. */
  List<Member> all() {
    List<Member> out = new ArrayList<>(entries.size());
    entries.forEach(e -> out.add(e.member()));
    return out;
  }

  /** Worker steps dropped to keep within the capacity. */
  long thinned() {
    return thinned;
  }
}
