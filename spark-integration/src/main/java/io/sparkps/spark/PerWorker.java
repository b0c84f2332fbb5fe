package io.sparkps.spark;

import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;

/** A run's input with one partition per worker, shuffled only when a barrier stage could not run on it as it is. */
final class PerWorker {
  private PerWorker() {}

  /**
   * The data with one partition per worker: as it is when it has that many partitions and a barrier
   * stage can run on it (no narrow ancestor with another partition count, such as a coalesce or a
   * union, up to the last shuffle); otherwise spread evenly by a shuffle.
   */
  static <T> JavaRDD<T> of(JavaRDD<T> data, int workers) {
    return data.getNumPartitions() == workers && samePartitionsUpToShuffle(data.rdd(), workers) ? data
        : data.repartition(workers);
  }

  static boolean samePartitionsUpToShuffle(RDD<?> rdd, int partitions) {
    java.util.ArrayDeque<RDD<?>> todo = new java.util.ArrayDeque<>(List.of(rdd));
    while (!todo.isEmpty()) {
      RDD<?> r = todo.pop();
      if (r.getNumPartitions() != partitions) {
        return false;
      }
      for (org.apache.spark.Dependency<?> d : scala.collection.JavaConverters.seqAsJavaList(r.dependencies())) {
        if (!(d instanceof org.apache.spark.ShuffleDependency)) {
          todo.push(d.rdd());
        }
      }
    }
    return true;
  }
}
