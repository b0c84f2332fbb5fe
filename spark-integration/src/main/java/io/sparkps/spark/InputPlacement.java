package io.sparkps.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

/**
 * How a run's input partitions are given to its N workers without a shuffle: grouped, each group
 * the input partitions of one worker, balanced by their row counts so that every worker has
 * nearly the same number of rows (every worker runs the same number of steps). Input that cannot
 * be balanced, because it has fewer non-empty partitions than workers or its partitions are too
 * skewed, gets no placement and must be shuffled.
 */
public final class InputPlacement implements Serializable {
  /** How far a worker's rows may be from the mean: within 10%. */
  static final double TOLERANCE = 0.10;
  private static final long serialVersionUID = 1L;

  private final int[][] groups;
  private final long[] groupRows;
  private final long[] partitionRows;

  private InputPlacement(int[][] groups, long[] groupRows, long[] partitionRows) {
    this.groups = groups;
    this.groupRows = groupRows;
    this.partitionRows = partitionRows;
  }

  /**
   * The placement of input partitions holding {@code rows} rows (by partition index) on
   * {@code workers} workers, or empty when they cannot be balanced (then the input must be shuffled).
   */
  public static java.util.Optional<InputPlacement> plan(long[] rows, int workers) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers is " + workers + ": must be >= 1");
    }
    // Largest first, each to the worker with the fewest rows so far.
    Integer[] bySize = IntStream.range(0, rows.length).boxed().toArray(Integer[]::new);
    Arrays.sort(bySize, Comparator.comparingLong((Integer i) -> rows[i]).reversed().thenComparing(i -> i));
    List<List<Integer>> groups = new ArrayList<>();
    long[] groupRows = new long[workers];
    for (int w = 0; w < workers; w++) {
      groups.add(new ArrayList<>());
    }
    for (int p : bySize) {
      int least = 0;
      if (rows.length == workers) {
        // One partition each: each keeps its own index (then it needs no grouping at all).
        groups.get(p).add(p);
        groupRows[p] += rows[p];
        continue;
      }
      for (int w = 1; w < workers; w++) {
        least = groupRows[w] < groupRows[least] ? w : least;
      }
      groups.get(least).add(p);
      groupRows[least] += rows[p];
    }
    long total = Arrays.stream(rows).sum();
    double mean = (double) total / workers;
    for (long g : groupRows) {
      if (g == 0 || Math.abs(g - mean) > TOLERANCE * mean) {
        return java.util.Optional.empty();
      }
    }
    int[][] out = new int[workers][];
    for (int w = 0; w < workers; w++) {
      out[w] = groups.get(w).stream().mapToInt(Integer::intValue).sorted().toArray();
    }
    return java.util.Optional.of(new InputPlacement(out, groupRows, rows.clone()));
  }

  /**
   * Whether the workers can read {@code data}'s partitions where they lie: no shuffle in its
   * lineage short of cached partitions (else they are shuffled to the workers).
   */
  public static boolean readableInPlace(org.apache.spark.api.java.JavaRDD<?> data) {
    return GroupedRdd.readable(data.context(), data.rdd());
  }

  /** Input partitions of each worker, in input order. */
  int[][] groups() {
    return groups;
  }

  /** Input partitions it was planned for. */
  int partitions() {
    return partitionRows.length;
  }

  /** Whether every worker gets exactly one input partition, its own index. */
  boolean identity() {
    for (int w = 0; w < groups.length; w++) {
      if (groups[w].length != 1 || groups[w][0] != w) {
        return false;
      }
    }
    return true;
  }

  /** Rows per worker. */
  public long[] workerRows() {
    return groupRows.clone();
  }

  /** Why input with partitions of {@code rows} rows must be shuffled for {@code workers} workers. */
  public static String whyShuffle(long[] rows, int workers) {
    long nonEmpty = Arrays.stream(rows).filter(r -> r > 0).count();
    String sizes = " (rows per partition: " + summary(rows) + ")";
    return nonEmpty < workers
        ? "the input has " + nonEmpty + " non-empty partitions for " + workers + " workers" + sizes
        : "the input's " + rows.length + " partitions cannot be split into " + workers + " groups of rows within "
            + Math.round(TOLERANCE * 100) + "% of each other" + sizes;
  }

  /** The first sizes of a list that may be long. */
  static String summary(long[] rows) {
    int shown = Math.min(rows.length, 16);
    String head = Arrays.toString(Arrays.copyOf(rows, shown));
    return shown == rows.length ? head : head.substring(0, head.length() - 1) + ", ... " + (rows.length - shown)
        + " more]";
  }

  @Override
  public String toString() {
    return partitionRows.length + " input partitions on " + groups.length + " workers without a shuffle, rows per "
        + "worker " + summary(groupRows);
  }
}
