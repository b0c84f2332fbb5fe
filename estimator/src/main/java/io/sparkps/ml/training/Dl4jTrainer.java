package io.sparkps.ml.training;

import io.sparkps.ml.checkpoint.AutoCheckpoints;
import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ml.checkpoint.SaveClock;
import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Schemas;
import io.sparkps.ml.network.ForwardReuse;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.InputPlacement;
import io.sparkps.spark.RunResult;
import io.sparkps.spark.SparkPsConf;
import io.sparkps.spark.TrainingCluster;
import io.sparkps.spark.TrainingJob;
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
  private static final Logger LOG = LoggerFactory.getLogger(Dl4jTrainer.class);

  private Dl4jTrainer() {}

  /**
   * Starts training the network {@code networkJson} (a {@code MultiLayerConfiguration}'s or
   * {@code ComputationGraphConfiguration}'s JSON) as {@code config} says, on a cluster of its
   * workers and ps; the job's result is the chief's final parameters (and the others' null).
   */
  public static TrainingJob<float[]> trainAsync(SparkSession spark, Dataset<Row> data, String networkJson,
      TrainingConfig config) {
    return trainAsync(spark, config.clusterSpec().build(), data, networkJson, config);
  }

  /**
   * {@link #trainAsync(SparkSession, Dataset, String, TrainingConfig)} on a cluster with its own
   * timeouts: {@code spec}, made from {@code config.clusterSpec()}.
   */
  public static TrainingJob<float[]> trainAsync(SparkSession spark, ClusterSpec spec, Dataset<Row> data,
      String networkJson, TrainingConfig config) {
    return launch(spark, spec, data, networkJson, config, DenseInputs.of(spark), null, Net.fromJson(networkJson),
        false).job();
  }

  /** A started run, how many steps each worker will take, and the rows it trains on (counted before it starts). */
  public record Launch(TrainingJob<float[]> job, long totalSteps, int stepsPerEpoch, long rows) {}

  /**
   * Starts a run of a network on {@code model}'s inputs, with an evaluator (the spec must ask for
   * one) when {@code evaluator} is not null; {@code probe} is the network of {@code networkJson},
   * built once on the driver for the checks. {@code ownCheckpoints}: the checkpoint directory is
   * the fit's own ({@link AutoCheckpoints}), deleted when it ends, so its
   * last save is made only when due like the others (nothing resumes from it).
   */
  public static Launch launch(SparkSession spark, ClusterSpec spec, Dataset<Row> data, String networkJson,
      TrainingConfig s, ModelInputs model, EvalWorker evaluator, Net probe, boolean ownCheckpoints) {
    s.checkCluster(spec);
    LabelKind kind = Schemas.labelKind(data.schema(), s.labelCol(), probe.classification(), probe.outputs());
    SparkPsConf.validate(spark.conf());
    boolean alwaysShuffle = DataConf.alwaysShuffle(spark);
    boolean reuseForwardPass = ForwardReuse.enabled(spark);
    if (s.checkpointDir() != null) {
      Checkpoints.checkShared(spark.sparkContext(), s.checkpointDir());
      // A checkpoint of another network or ps count fails here, before launch, not in every attempt.
      Checkpoints.latest(s.checkpointDir()).ifPresent(marker -> Checkpoints.checkFits(s.checkpointDir(), marker,
          NetworkVariables.of(probe, null), spec.numPs(), s.gradientAccumulation()));
    }
    // One cheap job checks the data and counts rows per partition: data in one non-empty partition
    // per worker is trained on where it is; anything else is spread evenly over the workers first.
    InputChecks.Partitions partitions = model.check(data, s, probe, kind);
    long rows = partitions.total();
    if (rows < spec.numWorkers()) {
      throw new IllegalArgumentException("the DataFrame has " + rows + " rows for " + spec.numWorkers() + " workers: "
          + "every worker needs at least one row; use fewer workers");
    }
    Dataset<Row> rowsToTrain = model.rowsToTrain(data, s);
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
    TrainWorker worker = new TrainWorker(networkJson, model, new ModelInputs.WorkerPlan(s, kind,
        (int) probe.inputWidth(), (int) probe.outputs(), stepsPerEpoch), reuseForwardPass, ownCheckpoints);
    TrainingCluster cluster = new TrainingCluster(spark, spec).withPlacement(placement.orElse(null));
    if (evaluator != null) {
      cluster.withEvaluator(evaluator);
    }
    return new Launch(cluster.runAsync(rowsToTrain.javaRDD(), worker, s.workerUpdates() ? null
        : finalParameters(probe, s.group(spec.numWorkers()).name(), s, model::export)), worker.totalSteps(),
        stepsPerEpoch, rows);
  }

  /**
   * Trains and returns the network (a {@code MultiLayerNetwork} or {@code ComputationGraph}, as
   * the JSON says) with the final parameters.
   */
  public static Model train(SparkSession spark, Dataset<Row> data, String networkJson, TrainingConfig config)
      throws InterruptedException {
    RunResult<float[]> result = trainAsync(spark, data, networkJson, config).join();
    Net net = Net.fromJson(networkJson);
    net.setParams(result.chief());
    return net.model();
  }

  /**
   * Reads the trained parameters from the shards on the driver, in the network's flat order, when
   * the chief returned none: when the last step's checkpoint was saved, for an embedding model
   * (whose tables the driver reads anyway) and with bf16 transfers. When a shard
   * cannot be read (a ps lost after the last step, with no worker left to refill it), they are read
   * from the run's latest checkpoint instead (the chief saves one at the end), through in-process
   * shards restored from it; without checkpoints the failure says so.
   */
  public static java.util.function.Function<io.sparkps.ps.PsClient, float[]> finalParameters(Net probe, String group,
      TrainingConfig s) {
    return finalParameters(probe, group, s, ps -> {});
  }

  /** As above, then {@code export} of the shards (or of their restored state): what the model keeps beside them. */
  static java.util.function.Function<io.sparkps.ps.PsClient, float[]> finalParameters(Net probe, String group,
      TrainingConfig s, java.util.function.Consumer<io.sparkps.ps.PsClient> export) {
    return ps -> {
      try {
        float[] params = readParameters(probe, group, ps);
        export.accept(ps);
        return params;
      } catch (io.sparkps.ps.spec.PsUnavailableException | io.sparkps.ps.spec.PsTimeoutException lost) {
        if (s.checkpointDir() == null) {
          throw new IllegalStateException("the trained parameters could not be read from the ps shards (a ps was lost "
              + "after the last step: " + lost.getMessage() + ") and the run has no checkpoints to read them from: set "
              + "checkpointDir to survive this", lost);
        }
        return fromCheckpoint(probe, group, s, ps.numShards(), lost, export);
      }
    };
  }

  private static float[] readParameters(Net probe, String group, io.sparkps.ps.PsClient ps) {
    org.nd4j.linalg.api.ndarray.INDArray flat = probe.params().ulike();
    ps.pullInto(NetworkVariables.of(probe, group, false).views(flat));
    return flat.toFloatVector();
  }

  private static float[] fromCheckpoint(Net probe, String group, TrainingConfig s, int numShards, RuntimeException lost,
      java.util.function.Consumer<io.sparkps.ps.PsClient> export) {
    String run = "sparkps-final-read-" + java.util.UUID.randomUUID();
    io.sparkps.ps.spec.PsToken token = io.sparkps.ps.spec.PsToken.generate();
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
                + "checkpoint: without a checkpointDir of yours, the run's own checkpoints come at least "
                + SaveClock.MIN_SPACING.toSeconds() + " s apart and a shorter run saves none; "
                + "set checkpointDir to have the last step saved", lost));
        LOG.warn("SparkPS: a ps was lost after the last step ({}): the trained parameters are those of the checkpoint "
            + "of step {} in {}", lost.getMessage(), r.marker().step(), r.marker().path());
        float[] params = readParameters(probe, group, restored);
        export.accept(restored);
        return params;
      }
    } finally {
      servers.forEach(io.sparkps.ps.ParameterServer::close);
    }
  }
}
