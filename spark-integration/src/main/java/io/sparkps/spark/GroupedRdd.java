package io.sparkps.spark;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.spark.Dependency;
import org.apache.spark.Partition;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.storage.RDDInfo;
import scala.collection.JavaConverters;
import scala.reflect.ClassTag;

/**
 * One partition per worker, each reading its group of input partitions where they lie, one after
 * the other, in the worker's own task: no shuffle and no copy. Spark's barrier stages refuse an
 * RDD chain whose partition counts change (a coalesce), so this RDD declares no dependency and
 * computes its parent itself, as a coalesce does. That is sound only for input whose narrow
 * lineage holds no shuffle that Spark would have to run or rerun first ({@link #readable}): a
 * source of its own (files, a parallelized collection) or cached partitions, as training data
 * usually is.
 */
final class GroupedRdd<T> extends RDD<T> {
  private static final long serialVersionUID = 1L;
  private final RDD<T> parent;
  private final Partition[] partitions;

  /** A worker's partition: the input partitions it reads, in input order. */
  private record Group(int index, Partition[] inputs) implements Partition {
    @Override
    public int hashCode() {
      return index;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Group g && g.index == index;
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  GroupedRdd(RDD<T> parent, int[][] groups, ClassTag<T> tag) {
    super(parent.context(), (scala.collection.immutable.Seq) scala.collection.immutable.Nil$.MODULE$, tag);
    this.parent = parent;
    Partition[] inputs = parent.partitions();
    partitions = new Partition[groups.length];
    for (int w = 0; w < groups.length; w++) {
      partitions[w] = new Group(w, Arrays.stream(groups[w]).mapToObj(p -> inputs[p]).toArray(Partition[]::new));
    }
  }

  @Override
  public Partition[] getPartitions() {
    return partitions;
  }

  @Override
  public scala.collection.Iterator<T> compute(Partition split, TaskContext context) {
    Partition[] inputs = ((Group) split).inputs();
    Iterator<T> all = new Iterator<>() {
      private int next;
      private scala.collection.Iterator<T> current;

      @Override
      public boolean hasNext() {
        while ((current == null || !current.hasNext()) && next < inputs.length) {
          current = parent.iterator(inputs[next++], context);
        }
        return current != null && current.hasNext();
      }

      @Override
      public T next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return current.next();
      }
    };
    return JavaConverters.asScalaIterator(all);
  }

  /** Where its input partitions prefer to be (an immutable Seq: Scala 2.12's Seq and 2.13's alike). */
  @Override
  public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
    Partition[] inputs = ((Group) split).inputs();
    List<String> where = new ArrayList<>();
    for (Partition p : inputs) {
      JavaConverters.seqAsJavaList(parent.preferredLocations(p)).stream().filter(h -> !where.contains(h))
          .forEach(where::add);
    }
    return JavaConverters.asScalaBuffer(where).toList();
  }

  /**
   * Whether {@code rdd} can be read by a {@link GroupedRdd}: no shuffle in its narrow lineage
   * short of partitions that are all cached.
   */
  static boolean readable(SparkContext sc, RDD<?> rdd) {
    Set<Integer> cached = Arrays.stream(sc.getRDDStorageInfo()).filter(i -> i.numCachedPartitions() == i.numPartitions())
        .map(RDDInfo::id).collect(Collectors.toSet());
    ArrayDeque<RDD<?>> todo = new ArrayDeque<>(List.of(rdd));
    while (!todo.isEmpty()) {
      RDD<?> r = todo.pop();
      if (cached.contains(r.id())) {
        continue;
      }
      for (Dependency<?> d : JavaConverters.seqAsJavaList(r.dependencies())) {
        if (d instanceof ShuffleDependency) {
          return false;
        }
        todo.push(d.rdd());
      }
    }
    return true;
  }
}
