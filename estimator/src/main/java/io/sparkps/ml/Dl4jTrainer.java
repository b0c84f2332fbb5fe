package io.sparkps.ml;

import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Origins;
import io.sparkps.ps.Consistency;
import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.InputPlacement;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.SparkPsConf;
import io.sparkps.spark.TrainingCluster;
import io.sparkps.spark.TrainingJob;
import java.io.Serializable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.api.Model;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Trains a DL4J network (a MultiLayerConfiguration's or ComputationGraphConfiguration's JSON) on
 * a DataFrame with a SparkPS cluster: every worker builds the network from its JSON, trains on its
 * partition against the shared variables, and the driver reads the final parameters from the ps
 * shards once every worker is done (with worker-side updates, the chief returns them). The Spark ML
 * Estimator wraps this.
 */
public final class Dl4jTrainer {
  /**
   * What to train and how.
   *
   * @param networkJson the {@code MultiLayerConfiguration} or {@code ComputationGraphConfiguration} as JSON
   * @param featuresCol the features column (vector or array of numbers)
   * @param labelCol the label column (class index or one-hot vector for classifiers; value or values for regressors)
   * @param consistency ASYNC, SYNC or SSP
   * @param staleness SSP's bound
   * @param epochs passes over the data (when {@code maxSteps} is 0)
   * @param maxSteps steps per worker in all, or 0 to run {@code epochs}
   * @param batchSize examples per minibatch and worker
   * @param seed shuffling seed
   * @param checkpointDir where to save checkpoints and resume from (a Hadoop path), or null
   * @param checkpointInterval steps between checkpoints (and one at the end)
   * @param checkpointsKept how many of the newest checkpoints are kept
   * @param stalenessAwareRate ASYNC and SSP: apply each gradient at the learning rate divided by 1 +
   *     its staleness (see {@link ConsistencyGroup#withStalenessAwareRate()})
   * @param workerUpdates each worker runs DL4J's updaters and pushes their updates, which the shards
   *     subtract (they keep no optimizer); for sparse transfers, whose updates must keep their size
   * @param gradientAccumulation minibatches whose mean gradient each worker pushes as one step,
   *     all computed from the values of one pull (1: every minibatch is a step)
   */
  public record Settings(String networkJson, String featuresCol, String labelCol, Consistency consistency,
      int staleness, int epochs, long maxSteps, int batchSize, long seed, String checkpointDir,
      int checkpointInterval, int checkpointsKept, boolean stalenessAwareRate, boolean workerUpdates,
      int gradientAccumulation) implements Serializable {
    /** Settings that push every minibatch's gradient. */
    public Settings(String networkJson, String featuresCol, String labelCol, Consistency consistency, int staleness,
        int epochs, long maxSteps, int batchSize, long seed, String checkpointDir, int checkpointInterval,
        int checkpointsKept, boolean stalenessAwareRate, boolean workerUpdates) {
      this(networkJson, featuresCol, labelCol, consistency, staleness, epochs, maxSteps, batchSize, seed, checkpointDir,
          checkpointInterval, checkpointsKept, stalenessAwareRate, workerUpdates, 1);
    }

    /** Settings without the staleness-aware rate. */
    public Settings(String networkJson, String featuresCol, String labelCol, Consistency consistency, int staleness,
        int epochs, long maxSteps, int batchSize, long seed, String checkpointDir, int checkpointInterval,
        int checkpointsKept) {
      this(networkJson, featuresCol, labelCol, consistency, staleness, epochs, maxSteps, batchSize, seed, checkpointDir,
          checkpointInterval, checkpointsKept, false, false);
    }

    /** Checks the values. */
    public Settings {
      if (epochs < 1 && maxSteps < 1) {
        throw new IllegalArgumentException("epochs is " + epochs + " and maxSteps " + maxSteps + ": set one >= 1");
      }
      if (batchSize < 1 || checkpointInterval < 1 || checkpointsKept < 1 || staleness < 0) {
        throw new IllegalArgumentException("batchSize (" + batchSize + "), checkpointInterval (" + checkpointInterval
            + ") and checkpointsKept (" + checkpointsKept + ") must be >= 1, staleness (" + staleness + ") >= 0");
      }
      if (gradientAccumulation < 1) {
        throw new IllegalArgumentException("gradientAccumulation is " + gradientAccumulation + ": it counts the "
            + "minibatches pushed as one step, so it must be >= 1 (1 pushes every minibatch)");
      }
      if (gradientAccumulation > 1 && workerUpdates) {
        throw new IllegalArgumentException("gradientAccumulation " + gradientAccumulation + " does not go with sparse "
            + "transfers, whose workers run DL4J's updater after every minibatch: set sparseDensity to 0, or "
            + "gradientAccumulation to 1");
      }
    }

    /** Settings for {@code epochs} epochs without checkpoints. */
    public static Settings of(String networkJson, String featuresCol, String labelCol, Consistency consistency,
        int epochs, int batchSize, long seed) {
      return new Settings(networkJson, featuresCol, labelCol, consistency, 2, epochs, 0, batchSize, seed, null, 100, 3);
    }
  }

  private static final Logger LOG = LoggerFactory.getLogger(Dl4jTrainer.class);

  private Dl4jTrainer() {}

  /** Starts training; the job's result is the chief's final parameters (and the others' null). */
  public static TrainingJob<float[]> trainAsync(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s) {
    return launch(spark, spec, data, s, null, Net.fromJson(s.networkJson())).job();
  }

  /** A started run and how many steps each worker will take. */
  record Launch(TrainingJob<float[]> job, long totalSteps, int stepsPerEpoch) {}

  /**
   * Starts a run, with an evaluator (the spec must ask for one) when {@code evaluator} is not null;
   * {@code probe} is the settings' network, built once on the driver for the checks.
   */
  static Launch launch(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s, EvalWorker evaluator,
      Net probe) {
    LabelKind kind = Schemas.labelKind(data.schema(), s.labelCol(), probe.classification(), probe.outputs());
    SparkPsConf.validate(spark.conf());
    boolean alwaysShuffle = DataConf.alwaysShuffle(spark);
    io.sparkps.ml.data.Minibatches.Limits limits = DataConf.limits(spark);
    boolean reuseForwardPass = ForwardReuse.enabled(spark);
    if (s.checkpointDir() != null) {
      Checkpoints.checkShared(spark.sparkContext(), s.checkpointDir());
      // A checkpoint of another network or ps count fails here, before launch, not in every attempt.
      Checkpoints.latest(s.checkpointDir()).ifPresent(marker -> Checkpoints.checkFits(s.checkpointDir(), marker,
          NetworkVariables.of(probe, null), spec.numPs(), s.gradientAccumulation()));
    }
    // One cheap job checks the data and counts rows per partition: data in one non-empty partition
    // per worker is trained on where it is; anything else is spread evenly over the workers first.
    InputChecks.Partitions partitions = InputChecks.check(data, s.featuresCol(), s.labelCol(), probe.inputWidth(), kind,
        probe.outputs());
    long rows = partitions.total();
    if (rows < spec.numWorkers()) {
      throw new IllegalArgumentException("the DataFrame has " + rows + " rows for " + spec.numWorkers() + " workers: "
          + "every worker needs at least one row; use fewer workers");
    }
    // Each row carries its place in the input through any shuffle, so that a bad row is named where it is.
    Dataset<Row> rowsToTrain = Origins.tag(data, s.featuresCol(), s.labelCol());
    // Input partitions that can be balanced over the workers are given to them as they are; others are shuffled.
    boolean inPlace = !alwaysShuffle && InputPlacement.readableInPlace(rowsToTrain.javaRDD());
    java.util.Optional<InputPlacement> placement = inPlace ? InputPlacement.plan(partitions.rows(), spec.numWorkers())
        : java.util.Optional.empty();
    if (placement.isEmpty()) {
      LOG.info("SparkPS shuffles the input over {} workers: {}", spec.numWorkers(), alwaysShuffle
          ? SparkPsConf.DATA_ALWAYS_SHUFFLE.key() + " is always" : !inPlace ? "it comes from a shuffle that is not cached (cache it to "
          + "have it read where it lies)" : InputPlacement.whyShuffle(partitions.rows(), spec.numWorkers()));
      rowsToTrain = rowsToTrain.repartition(spec.numWorkers());
    }
    int stepsPerEpoch = (int) Math.max(1, rows / ((long) spec.numWorkers() * s.batchSize()));
    TrainWorker worker = new TrainWorker(s, kind, stepsPerEpoch, limits, (int) probe.inputWidth(),
        (int) probe.outputs(), reuseForwardPass);
    TrainingCluster cluster = new TrainingCluster(spark, spec).withPlacement(placement.orElse(null));
    if (evaluator != null) {
      cluster.withEvaluator(evaluator);
    }
    return new Launch(cluster.runAsync(rowsToTrain.javaRDD(), worker, s.workerUpdates() ? null
        : finalParameters(probe, group(s, spec.numWorkers()).name(), s)), worker.totalSteps(), stepsPerEpoch);
  }

  /**
   * Trains and returns the network (a {@code MultiLayerNetwork} or {@code ComputationGraph}, as
   * the JSON says) with the final parameters.
   */
  public static Model train(SparkSession spark, ClusterSpec spec, Dataset<Row> data, Settings s)
      throws InterruptedException {
    RunResult<float[]> result = trainAsync(spark, spec, data, s).join();
    Net net = Net.fromJson(s.networkJson());
    net.setParams(result.chief());
    return net.model();
  }

  /**
   * Reads the trained parameters from the shards on the driver, in the network's flat order (the
   * chief returns none; with worker-side updates it returns what it holds instead). When a shard
   * cannot be read (a ps lost after the last step, with no worker left to refill it), they are read
   * from the run's latest checkpoint instead (the chief saves one at the end), through in-process
   * shards restored from it; without checkpoints the failure says so.
   */
  static java.util.function.Function<io.sparkps.ps.PsClient, float[]> finalParameters(Net probe, String group,
      Settings s) {
    return ps -> {
      try {
        return readParameters(probe, group, ps);
      } catch (io.sparkps.ps.PsUnavailableException | io.sparkps.ps.PsTimeoutException lost) {
        if (s.checkpointDir() == null) {
          throw new IllegalStateException("the trained parameters could not be read from the ps shards (a ps was lost "
              + "after the last step: " + lost.getMessage() + ") and the run has no checkpoints to read them from: set "
              + "checkpointDir to survive this", lost);
        }
        return fromCheckpoint(probe, group, s, ps.numShards(), lost);
      }
    };
  }

  private static float[] readParameters(Net probe, String group, io.sparkps.ps.PsClient ps) {
    org.nd4j.linalg.api.ndarray.INDArray flat = probe.params().ulike();
    ps.pullInto(NetworkVariables.of(probe, group, false).views(flat));
    return flat.toFloatVector();
  }

  private static float[] fromCheckpoint(Net probe, String group, Settings s, int numShards, RuntimeException lost) {
    String run = "sparkps-final-read-" + java.util.UUID.randomUUID();
    io.sparkps.ps.PsToken token = io.sparkps.ps.PsToken.generate();
    java.util.List<io.sparkps.ps.ParameterServer> servers = new java.util.ArrayList<>();
    try {
      for (int i = 0; i < numShards; i++) {
        servers.add(io.sparkps.ps.ParameterServer.builder().setShardIndex(i).setToken(token).optInProcess(run + "-" + i)
            .build().start());
      }
      try (io.sparkps.ps.PsClient restored = io.sparkps.ps.PsClient.builder()
          .setShards(servers.stream().map(io.sparkps.ps.ParameterServer::address).toList()).setToken(token).build()) {
        Checkpoints.Restored r = Checkpoints.restore(restored, s.checkpointDir(), NetworkVariables.of(probe, null),
            s.gradientAccumulation()).orElseThrow(() -> new IllegalStateException("the trained parameters could not "
                + "be read from the ps shards (" + lost.getMessage() + ") and " + s.checkpointDir() + " holds no "
                + "checkpoint", lost));
        LOG.warn("SparkPS: a ps was lost after the last step ({}): the trained parameters are those of the checkpoint "
            + "of step {} in {}", lost.getMessage(), r.marker().step(), r.marker().path());
        return readParameters(probe, group, restored);
      }
    } finally {
      servers.forEach(io.sparkps.ps.ParameterServer::close);
    }
  }

  static ConsistencyGroup group(Settings s, int workers) {
    return switch (s.consistency()) {
      case SYNC -> ConsistencyGroup.sync("dl4j", workers);
      case SSP -> s.stalenessAwareRate() ? ConsistencyGroup.ssp("dl4j", workers, s.staleness()).withStalenessAwareRate()
          : ConsistencyGroup.ssp("dl4j", workers, s.staleness());
      case ASYNC -> s.stalenessAwareRate() ? ConsistencyGroup.async("dl4j").withStalenessAwareRate()
          : ConsistencyGroup.async("dl4j");
    };
  }
}
