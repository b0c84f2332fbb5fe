package io.sparkps.ps.client;

import io.sparkps.ps.wire.SparseValues;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * A worker's side of sparse transfers (see {@link ClientOptions#optSparseTransfers}). Pushes: a
 * gradient slice is added to what this worker has not yet sent of it (its residual); the elements
 * of largest magnitude go, the rest stay in the residual for later steps (error feedback, so no
 * gradient is lost, only delayed). Pulls: remembers, per slice, the generation of the last reply
 * whose values the destination holds, so the shard can send only what moved since.
 */
final class SparseTransfers {
  private final double density;
  private final double pullDensity;
  private final Map<String, float[]> residuals = new HashMap<>();
  private final Map<String, Long> generations = new HashMap<>();
  private final Map<String, Long> destinations = new HashMap<>();
  private long picks;

  SparseTransfers(double density, double pullDensity) {
    this.density = density;
    this.pullDensity = pullDensity;
  }

  /** The fraction of a slice's elements a pull may receive. */
  double pullDensity() {
    return pullDensity;
  }

  /** One slice of a gradient as pairs: {@code nonzeros} of its {@code count} elements. */
  record Pairs(int count, int nonzeros, ByteBuffer bytes) {
    /** The slice as dense little-endian floats, zero where nothing was picked (for transports without pairs). */
    ByteBuffer dense() {
      float[] values = new float[count];
      SparseValues.scatter(bytes.duplicate(), nonzeros, count, values, 0, "sparse gradient");
      ByteBuffer b = ByteBuffer.allocate(4 * count).order(ByteOrder.LITTLE_ENDIAN);
      b.asFloatBuffer().put(values);
      return b;
    }
  }

  /**
   * Adds {@code gradient} (the slice's little-endian floats) to the residual of slice
   * {@code name@offset}, picks the largest, and keeps the rest; returns the picked pairs.
   */
  synchronized Pairs pick(String name, long offset, ByteBuffer gradient) {
    FloatBuffer g = gradient.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    int n = g.remaining();
    float[] r = residuals.computeIfAbsent(name + "@" + offset, k -> new float[n]);
    if (r.length != n) {
      throw new IllegalStateException("gradient slice of '" + name + "' at " + offset + " has " + n
          + " elements, its residual " + r.length);
    }
    float[] chunk = CHUNK.get();
    for (int done = 0; done < n; ) {
      int c = Math.min(chunk.length, n - done);
      g.get(chunk, 0, c);
      for (int i = 0; i < c; i++) {
        r[done + i] += chunk[i];
      }
      done += c;
    }
    int[] idx = SparseValues.indices(n);
    int k = SparseValues.selectLargest(r, 0, n, SparseValues.budget(density, n), idx, ++picks);
    ByteBuffer pairs = SparseValues.pairs(idx, k, r, 0);
    for (int j = 0; j < k; j++) {
      r[idx[j]] = 0f;
    }
    return new Pairs(n, k, pairs);
  }

  /**
   * Subtracts from {@code values} (slice {@code name@offset}'s little-endian floats) what this
   * worker's pushes have not sent yet of that slice; nothing when none is waiting.
   */
  synchronized void subtractUnsent(String name, long offset, ByteBuffer values) {
    float[] r = residuals.get(name + "@" + offset);
    FloatBuffer v = values.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    if (r == null || r.length != v.remaining()) {
      return;
    }
    float[] chunk = CHUNK.get();
    for (int done = 0; done < r.length; ) {
      int c = Math.min(chunk.length, r.length - done);
      v.get(done, chunk, 0, c);
      for (int i = 0; i < c; i++) {
        chunk[i] -= r[done + i];
      }
      v.put(done, chunk, 0, c);
      done += c;
    }
  }

  /**
   * The generation to name when pulling slice {@code name@offset} into the array at
   * {@code address}: 0 (send it whole) when the last pull of {@code name} went elsewhere.
   */
  synchronized long knownGeneration(String name, long offset, long address) {
    Long at = destinations.put(name, address);
    if (at == null || at != address) {
      generations.keySet().removeIf(k -> k.startsWith(name + "@"));
      return 0;
    }
    return generations.getOrDefault(name + "@" + offset, 0L);
  }

  /** Records the generation a reply gave slice {@code name@offset} (0: the shard keeps no copy). */
  synchronized void received(String name, long offset, long generation) {
    generations.put(name + "@" + offset, generation);
  }

  private static final ThreadLocal<float[]> CHUNK = ThreadLocal.withInitial(() -> new float[1 << 14]);
}
