package io.sparkps.ps.wire;

import io.sparkps.ps.annotation.Internal;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reuses the float arrays that incoming frames are decoded into, so that a push of many MiB does
 * not allocate (humongous) arrays per frame. Arrays come in power-of-two capacities; at most
 * {@code maxRetainedBytes} are kept.
 */
@Internal
public final class FloatPool {
  private final ConcurrentHashMap<Integer, Queue<float[]>> free = new ConcurrentHashMap<>();
  private final AtomicLong retainedBytes = new AtomicLong();
  private final long maxRetainedBytes;

  /** A pool that keeps at most {@code maxRetainedBytes} of free arrays. */
  public FloatPool(long maxRetainedBytes) {
    this.maxRetainedBytes = maxRetainedBytes;
  }

  /** An array of at least {@code n} floats; its contents are undefined. */
  public float[] take(int n) {
    if (n > (1 << 30)) {
      return new float[n];
    }
    int capacity = n <= 1024 ? 1024 : Integer.highestOneBit(n - 1) << 1;
    Queue<float[]> queue = free.get(capacity);
    float[] array = queue == null ? null : queue.poll();
    if (array == null) {
      return new float[capacity];
    }
    retainedBytes.addAndGet(-4L * capacity);
    return array;
  }

  /** Returns an array taken from this pool. */
  public void give(float[] array) {
    if (array == null || Integer.bitCount(array.length) != 1) {
      return;
    }
    if (retainedBytes.addAndGet(4L * array.length) > maxRetainedBytes) {
      retainedBytes.addAndGet(-4L * array.length);
      return;
    }
    free.computeIfAbsent(array.length, k -> new ConcurrentLinkedQueue<>()).add(array);
  }
}
