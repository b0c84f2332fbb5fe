package io.sparkps.ps.server;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A slice's copies of what each worker that pulls sparsely holds of it, so that a sparse pull
 * sends the elements that moved most since that worker's last reply, and the rest keep waiting
 * (error feedback on the way out). A copy costs the slice's size in floats; at most
 * {@value #MAX_WORKERS} workers get one, others are answered dense. Guarded by the slice's lock.
 */
final class Replicas {
  static final int MAX_WORKERS = 256;
  /** Generations are unique in a JVM and start at a random point, so a copy in a replaced shard never matches. */
  private static final AtomicLong GENERATIONS = new AtomicLong(new java.util.SplittableRandom().nextLong(1, 1L << 62));
  private final Map<Integer, Copy> copies = new HashMap<>();

  /** What one worker holds of the slice, as of its reply of {@code generation}. */
  static final class Copy {
    final float[] values;
    long generation;

    Copy(int size) {
      this.values = new float[size];
    }
  }

  /** The copy of {@code worker}, made when it has none; null when too many workers have one. */
  Copy of(int worker, int size) {
    Copy c = copies.get(worker);
    if (c == null && copies.size() < MAX_WORKERS) {
      c = new Copy(size);
      copies.put(worker, c);
    }
    return c;
  }

  /** A new generation number. */
  static long nextGeneration() {
    return GENERATIONS.incrementAndGet();
  }
}
