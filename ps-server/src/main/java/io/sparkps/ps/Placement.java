package io.sparkps.ps;

import io.sparkps.ps.spec.VariableSpec;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where each variable lives: a deterministic function of the declared specs, the number of
 * shards and the load already placed, so every task computes the same plan without asking the
 * servers.
 *
 * <p>Rules, in order: a pinned variable goes whole to its shard; a variable of at least
 * {@code splitBytes} with at least as many rows as shards is split into contiguous row ranges,
 * one per shard; every other variable goes whole to the least-loaded shard (ties to the lowest
 * index), the largest first and equal sizes by name.
 */
public final class Placement {
  /** Variables this large or larger are split across all shards by default (256 KiB, as TF's min slice). */
  public static final long DEFAULT_SPLIT_BYTES = 256L << 10;

  /**
   * One contiguous row range of one variable on one shard.
   *
   * @param name the variable
   * @param shard the shard holding the rows
   * @param rowStart the first row
   * @param rowEnd one past the last row
   * @param rowLength elements per row
   */
  public record Slice(String name, int shard, long rowStart, long rowEnd, long rowLength) {
    /** Element offset of this slice in the whole variable. */
    public long offset() {
      return rowStart * rowLength;
    }

    /** Elements in this slice. */
    public long length() {
      return (rowEnd - rowStart) * rowLength;
    }
  }

  private final int numShards;
  private final long splitBytes;
  private final long[] load;
  private final Map<String, List<Slice>> slices = new LinkedHashMap<>();

  /** An empty plan over {@code numShards} shards. */
  public Placement(int numShards, long splitBytes) {
    if (numShards < 1) {
      throw new IllegalArgumentException("numShards must be >= 1, got " + numShards);
    }
    if (splitBytes < 1) {
      throw new IllegalArgumentException("splitBytes must be >= 1, got " + splitBytes);
    }
    this.numShards = numShards;
    this.splitBytes = splitBytes;
    this.load = new long[numShards];
  }

  /**
   * Places a batch of new variables, on top of what this plan holds already. Variables it holds
   * already keep their place. Returns the slices of the batch, in the batch's order.
   */
  public synchronized Map<String, List<Slice>> place(Collection<VariableSpec> batch) {
    List<VariableSpec> pinned = new ArrayList<>();
    List<VariableSpec> split = new ArrayList<>();
    List<VariableSpec> whole = new ArrayList<>();
    for (VariableSpec spec : batch) {
      if (slices.containsKey(spec.name())) {
        continue;
      }
      if (spec.pinnedShard() != VariableSpec.UNPINNED) {
        if (spec.pinnedShard() >= numShards) {
          throw new IllegalArgumentException("variable '" + spec.name() + "' is pinned to ps "
              + spec.pinnedShard() + " but the run has only " + numShards + " ps shard(s) (0.."
              + (numShards - 1) + ")");
        }
        pinned.add(spec);
      } else if (numShards > 1 && spec.length() * 4 >= splitBytes && spec.rows() >= numShards) {
        split.add(spec);
      } else {
        whole.add(spec);
      }
    }
    pinned.forEach(s -> putWhole(s, s.pinnedShard()));
    split.sort(Comparator.comparing(VariableSpec::name));
    split.forEach(this::putSplit);
    whole.sort(Comparator.comparingLong(VariableSpec::length).reversed()
        .thenComparing(VariableSpec::name));
    whole.forEach(s -> putWhole(s, leastLoaded()));
    Map<String, List<Slice>> result = new LinkedHashMap<>();
    for (VariableSpec spec : batch) {
      result.put(spec.name(), slices.get(spec.name()));
    }
    return result;
  }

  /**
   * Records slices that a server reported (for a client that did not declare the variable).
   * Does not change the load used for planning.
   */
  public synchronized void adopt(String name, List<Slice> known) {
    slices.putIfAbsent(name, List.copyOf(known));
  }

  /** The slices of a variable, in row order, or null if it is not placed. */
  public synchronized List<Slice> slicesOf(String name) {
    return slices.get(name);
  }

  /** Bytes placed on each shard. */
  public synchronized long[] loadBytes() {
    long[] bytes = load.clone();
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] *= 4;
    }
    return bytes;
  }

  /** The number of shards. */
  public int numShards() {
    return numShards;
  }

  private void putWhole(VariableSpec spec, int shard) {
    slices.put(spec.name(), List.of(new Slice(spec.name(), shard, 0, spec.rows(), spec.rowLength())));
    load[shard] += spec.length();
  }

  private void putSplit(VariableSpec spec) {
    List<Slice> parts = new ArrayList<>(numShards);
    long rows = spec.rows();
    for (int s = 0; s < numShards; s++) {
      long start = rows * s / numShards;
      long end = rows * (s + 1) / numShards;
      parts.add(new Slice(spec.name(), s, start, end, spec.rowLength()));
      load[s] += (end - start) * spec.rowLength();
    }
    slices.put(spec.name(), List.copyOf(parts));
  }

  private int leastLoaded() {
    int best = 0;
    for (int s = 1; s < numShards; s++) {
      if (load[s] < load[best]) {
        best = s;
      }
    }
    return best;
  }
}
