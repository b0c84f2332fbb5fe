package io.sparkps.ml;

import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.spark.LocalClusters;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import io.sparkps.spark.recovery.PsRecovery;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * What the fault tests and the fault soak share: a {@code local-cluster} with Fashion-MNIST cached
 * (the first rows of the training set, 2,000 test images for the evaluator, the whole test set to
 * score), and waits on a running fit (for the chief to reach a step, for a lost ps to be declared
 * lost and refilled).
 */
final class Faults {
  final JavaSparkContext sc;
  final SparkSession spark;
  final Dataset<Row> train;
  final Dataset<Row> eval;
  final FashionMnistTestSet test;
  /** How many of the training set's images {@link #train} holds. */
  final long trainRows;

  private Faults(JavaSparkContext sc, int trainRows) throws IOException {
    this.sc = sc;
    this.spark = SparkSession.builder().sparkContext(sc.sc()).getOrCreate();
    // The same rows every time a partition is computed, as after an executor that cached one was
    // killed, read from the file without a shuffle: a limit over several partitions took its rows in
    // the order their blocks arrived (runs that trained on different parts of the set ended 3 points
    // apart, clean ones included), and a repartition after it put a shuffle, whose map output can die
    // with the same executor, between the file and a lost cached partition.
    this.train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2, trainRows).cache();
    this.trainRows = train.count();
    this.eval = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "t10k", 1).limit(2000).cache();
    eval.count();
    this.test = FashionMnistTestSet.read();
  }

  /**
   * {@code local-cluster[executors,cores,memoryMb]} (SPARK_HOME below {@code home}) with the data
   * cached: the first {@code trainRows} images of the training set (all 60,000 at most), in 2
   * partitions.
   */
  static Faults start(Path home, int executors, int cores, int memoryMb, String name, int trainRows)
      throws IOException {
    JavaSparkContext sc = LocalClusters.start(home, executors, cores, memoryMb, LocalClusters.conf().setAppName(name));
    try {
      return new Faults(sc, trainRows);
    } catch (IOException | RuntimeException e) {
      // No data (e.g. Fashion-MNIST not installed): the cluster goes, or it fails the next class's start too.
      LocalClusters.stop(sc);
      throw e;
    }
  }

  void stop() {
    LocalClusters.stop(sc);
  }

  /** The test accuracy of a model of the tests' MLP. */
  double accuracy(Dl4jModel model) {
    return test.accuracy((org.deeplearning4j.nn.multilayer.MultiLayerNetwork) model.network());
  }

  /** Waits (5 minutes at most) until the chief reported step {@code step}; every role's progress then. */
  static List<TaskProgress> awaitChiefStep(FitJob job, long step) throws InterruptedException {
    return awaitChiefStep(job::progress, () -> job.status().isDone(), () -> job.status().toString(), step);
  }

  /** As above, for a run of the trainer alone. */
  static List<TaskProgress> awaitChiefStep(io.sparkps.spark.TrainingJob<?> job, long step) throws InterruptedException {
    return awaitChiefStep(job::progress, job::isDone, () -> job.status().toString(), step);
  }

  /**
   * Waits (5 minutes at most) until a SYNC run is at step {@code step}, as the ps's variables'
   * versions count it (one update a step), or as the chief's heartbeats report it; returns every
   * role's progress then. Heartbeats come a second apart, about as long as the fault tests' runs
   * train on this machine: signals sent "at 30%" of those steps landed after the last push (a
   * ps declared lost at step 156 of 156, with no worker left to refill it). The versions are read
   * from the ps as the run's {@code inspect()} reads them, a few milliseconds behind.
   */
  static List<TaskProgress> awaitSyncStep(FitJob job, long step) throws InterruptedException {
    return awaitSyncStep(job::inspect, () -> job.status().isDone(), step);
  }

  /** As above, for a run of the trainer alone. */
  static List<TaskProgress> awaitSyncStep(io.sparkps.spark.TrainingJob<?> job, long step)
      throws InterruptedException {
    return awaitSyncStep(job::inspect, job::isDone, step);
  }

  private static List<TaskProgress> awaitSyncStep(java.util.function.Supplier<io.sparkps.spark.ClusterView> inspect,
      java.util.function.BooleanSupplier done, long step) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    io.sparkps.spark.ClusterView now = null;
    while (System.nanoTime() < deadline && !done.getAsBoolean()) {
      now = inspect.get();
      long versions = now.variables().stream().mapToLong(io.sparkps.ps.spec.VariableInfo::version).max().orElse(0);
      long reported = now.roles().stream().filter(p -> p.role() == Role.CHIEF).mapToLong(TaskProgress::step).max()
          .orElse(0);
      if (Math.max(versions, reported) >= step && now.roles().stream().anyMatch(p -> p.role() == Role.PS)) {
        return now.roles();
      }
      Thread.sleep(10);
    }
    throw new AssertionError("the run did not reach step " + step + ": " + now);
  }

  private static List<TaskProgress> awaitChiefStep(java.util.function.Supplier<List<TaskProgress>> progress,
      java.util.function.BooleanSupplier done, java.util.function.Supplier<String> status, long step)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
    while (System.nanoTime() < deadline && !done.getAsBoolean()) {
      List<TaskProgress> now = progress.get();
      if (now.stream().anyMatch(p -> p.role() == Role.CHIEF && p.step() >= step)) {
        return now;
      }
      Thread.sleep(50);
    }
    throw new AssertionError("the chief did not reach step " + step + ": " + status.get() + " " + progress.get());
  }

  /**
   * Milliseconds from {@code since} until the run declared a ps lost, and until it was refilled
   * (-1 for what did not happen within 4 minutes or before the run ended), polled live.
   */
  static long[] awaitRecovery(FitJob job, long since) throws InterruptedException {
    long noticed = -1;
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(4);
    while (System.nanoTime() < deadline && !job.status().isDone()) {
      List<PsRecovery> now = job.psRecoveries();
      long ms = (System.nanoTime() - since) / 1_000_000;
      if (!now.isEmpty() && noticed < 0) {
        noticed = ms;
      }
      if (!now.isEmpty() && now.get(0).source() != null) {
        return new long[] {noticed, ms};
      }
      Thread.sleep(50);
    }
    return new long[] {noticed, -1};
  }
}
