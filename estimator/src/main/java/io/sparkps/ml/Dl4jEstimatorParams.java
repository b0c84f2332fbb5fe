package io.sparkps.ml;

import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.TrainingConfig;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamValidators;

/**
 * The settings of a {@link Dl4jEstimator}: every one a Spark {@code Param} with its default and
 * validator, and their accessors. The estimator adds the setters, fitting and persistence.
 */
public abstract class Dl4jEstimatorParams extends Estimator<Dl4jModel> {
  private static final long serialVersionUID = 1L;
  private final String uid;


  final Param<String> featuresCol;
  final Param<String> labelCol;
  final Param<String> predictionCol;
  final Param<String> probabilityCol;
  final Param<String> rawPredictionCol;
  final Param<String> networkJson;
  final Param<String> network;
  final IntParam numWorkers;
  final IntParam numPs;
  final IntParam batchSize;
  final IntParam epochs;
  final LongParam maxSteps;
  final Param<String> checkpointDir;
  final IntParam checkpointInterval;
  final IntParam checkpointsKept;
  final Param<String> consistency;
  final IntParam staleness;
  final LongParam seed;
  final org.apache.spark.ml.param.DoubleParam evalEverySeconds;
  final org.apache.spark.ml.param.BooleanParam evalDeferred;
  final org.apache.spark.ml.param.BooleanParam stalenessAwareRate;
  final org.apache.spark.ml.param.BooleanParam asyncTables;
  final org.apache.spark.ml.param.BooleanParam bf16Transfers;
  final org.apache.spark.ml.param.DoubleParam sparseDensity;
  final IntParam gradientAccumulation;
  final Param<String> embeddingColumns;
  final org.apache.spark.ml.param.StringArrayParam numericCols;
  final org.apache.spark.ml.param.BooleanParam factorizationTerm;
  final org.apache.spark.ml.param.BooleanParam widePart;

  /** Declares every param of an estimator with {@code uid}, with its default. */
  Dl4jEstimatorParams(String uid) {
    this.uid = uid;
    featuresCol = new Param<>(this, "featuresCol", "features column name");
    labelCol = new Param<>(this, "labelCol", "label column name (class index or one-hot vector for classifiers, "
        + "number or vector for regressors)");
    predictionCol = new Param<>(this, "predictionCol", "prediction column name");
    probabilityCol = new Param<>(this, "probabilityCol", "class probabilities column name");
    rawPredictionCol = new Param<>(this, "rawPredictionCol", "raw output (before the output activation) column name");
    networkJson = new Param<>(this, "networkJson", "the DL4J MultiLayerConfiguration or ComputationGraphConfiguration "
        + "as JSON, or a compiled tf.keras (Keras 2) model's JSON with its compile settings under training_config, "
        + "imported through DL4J's Keras import when fitting");
    network = new Param<>(this, "network", "a preset network sized to the data when fitting, used when networkJson "
        + "is not set: mlp (one hidden layer of 256), mlp:H1,H2,... (ReLU layers of those sizes) or lenet (square "
        + "single-channel images), Adam at 0.001, softmax over the label's classes; or keras:PATH, a compiled "
        + "tf.keras model saved as .h5 (on any Hadoop file system the driver reads)",
        (scala.Function1<String, Object>) spec -> NetworkPresets.valid(spec) || KerasNetworks.isFileSpec(spec));
    numWorkers = new IntParam(this, "numWorkers", "workers, the chief included (>= 1)", ParamValidators.gtEq(1));
    numPs = new IntParam(this, "numPs", "parameter servers (>= 1)", ParamValidators.gtEq(1));
    batchSize = new IntParam(this, "batchSize", "examples per minibatch and worker (>= 1)", ParamValidators.gtEq(1));
    epochs = new IntParam(this, "epochs", "passes over the data (>= 1; unused when maxSteps is set)",
        ParamValidators.gtEq(1));
    maxSteps = new LongParam(this, "maxSteps", "steps per worker in all (>= 1), instead of epochs; 0 to run epochs",
        ParamValidators.gtEq(0));
    checkpointDir = new Param<>(this, "checkpointDir", "Hadoop path where training saves checkpoints and resumes "
        + "from the latest one (unset: a directory of the fit's own that every executor shares, deleted when the fit "
        + "ends; 'none': no checkpoints)");
    checkpointInterval = new IntParam(this, "checkpointInterval", "steps between checkpoints (>= 1), or 0 for "
        + "automatic: spaced so that saving takes at most 1% of the chief's time", ParamValidators.gtEq(0));
    checkpointsKept = new IntParam(this, "checkpointsKept", "checkpoints kept, the newest (>= 1)", ParamValidators.gtEq(1));
    consistency = new Param<>(this, "consistency", "ASYNC, SYNC or SSP",
        ParamValidators.inArray(new String[] {"ASYNC", "SYNC", "SSP"}));
    staleness = new IntParam(this, "staleness", "SSP staleness bound (>= 0)", ParamValidators.gtEq(0));
    seed = new LongParam(this, "seed", "seed of the minibatch shuffles");
    evalEverySeconds = new org.apache.spark.ml.param.DoubleParam(this, "evalEverySeconds",
        "seconds between evaluations at the least (> 0)", ParamValidators.gt(0));
    evalDeferred = new org.apache.spark.ml.param.BooleanParam(this, "evalDeferred", "whether the evaluator only "
        + "copies the variables while training runs and scores the copies after it (no cores taken from training)");
    stalenessAwareRate = new org.apache.spark.ml.param.BooleanParam(this, "stalenessAwareRate", "ASYNC and SSP: "
        + "whether each gradient is applied at the learning rate divided by 1 + its staleness (the updates other "
        + "workers made since it was computed)");
    asyncTables = new org.apache.spark.ml.param.BooleanParam(this, "asyncTables", "with embeddingColumns: the tables "
        + "apply each worker's row gradients at once (ASYNC), whatever the dense part's consistency");
    bf16Transfers = new org.apache.spark.ml.param.BooleanParam(this, "bf16Transfers", "whether gradients and "
        + "parameters travel as bfloat16 between executors (half the bytes; the ps keeps float32)");
    sparseDensity = new org.apache.spark.ml.param.DoubleParam(this, "sparseDensity", "ASYNC and SSP: the fraction "
        + "of each large variable's elements a worker's push and pull send, those that changed most, the rest kept "
        + "for later (0: dense)", ParamValidators.inRange(0, 1));
    gradientAccumulation = new IntParam(this, "gradientAccumulation", "minibatches whose mean gradient a worker "
        + "pushes as one step, all computed from one pull (>= 1; 1: every minibatch is a step)", ParamValidators.gtEq(1));
    embeddingColumns = new Param<>(this, "embeddingColumns", "categorical columns as embedding tables on the ps, as a "
        + "JSON list of {column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, "
        + "maxRowsPerShard, initScale} (EmbeddingColumn.toJson); [] (the default): the network reads featuresCol");
    numericCols = new org.apache.spark.ml.param.StringArrayParam(this, "numericCols", "with embeddingColumns: the "
        + "numeric columns the network reads after the pooled embeddings (null reads 0)");
    factorizationTerm = new org.apache.spark.ml.param.BooleanParam(this, "factorizationTerm", "with embeddingColumns: "
        + "whether the network's last input is the sum of the pairwise dot products of the pooled embeddings (as "
        + "DeepFM's factorization machine; the columns then need one dim)");
    widePart = new org.apache.spark.ml.param.BooleanParam(this, "widePart", "with embeddingColumns: whether each "
        + "column also has a 1-dimensional embedding (a weight per id, as Wide & Deep's wide part), read after the "
        + "numeric columns, one input per column");
    setDefault(predictionCol, "prediction");
    setDefault(probabilityCol, "probability");
    setDefault(rawPredictionCol, "rawPrediction");
    putConfig(TrainingConfig.defaults(), this::setDefault);
  }

  /** Where {@link #putConfig} puts each option's value: a Param's value, or its default. */
  interface ParamSink {
    <T> void put(Param<T> param, T value);
  }

  /**
   * Puts every training option of {@code config} but the checkpoint directory into its Param
   * through {@code to}: the one mapping from a {@link TrainingConfig} to the Params, which gives
   * them their defaults ({@code TrainingConfig.defaults()}) and {@code setConfig} its values.
   */
  final void putConfig(TrainingConfig config, ParamSink to) {
    to.put(featuresCol, config.featuresCol());
    to.put(labelCol, config.labelCol());
    to.put(numWorkers, config.numWorkers());
    to.put(numPs, config.numPs());
    to.put(batchSize, config.batchSize());
    to.put(epochs, config.epochs());
    to.put(maxSteps, config.maxSteps());
    to.put(consistency, config.consistency().name());
    to.put(staleness, config.staleness());
    to.put(stalenessAwareRate, config.stalenessAwareRate());
    to.put(asyncTables, config.asyncTables());
    to.put(seed, config.seed());
    to.put(checkpointInterval, config.checkpointInterval());
    to.put(checkpointsKept, config.checkpointsKept());
    to.put(gradientAccumulation, config.gradientAccumulation());
    to.put(bf16Transfers, config.bf16Transfers());
    to.put(sparseDensity, config.sparseDensity());
    to.put(evalEverySeconds, config.evalEverySeconds());
    to.put(evalDeferred, config.evalDeferred());
    to.put(embeddingColumns, EmbeddingColumn.toJson(config.embeddingColumns()));
    to.put(numericCols, config.numericCols().toArray(new String[0]));
    to.put(factorizationTerm, config.factorizationTerm());
    to.put(widePart, config.widePart());
  }

  /**
   * The training options as set (or defaulted) here, all but the network and the output columns:
   * the one place where this estimator's Params become a {@link TrainingConfig}. Options that do
   * not go together are refused here, naming them.
   */
  public TrainingConfig getConfig() {
    return TrainingConfig.builder().optFeaturesCol(getOrDefault(featuresCol)).optLabelCol(getOrDefault(labelCol))
        .optNumWorkers((Integer) getOrDefault(numWorkers)).optNumPs((Integer) getOrDefault(numPs))
        .optBatchSize((Integer) getOrDefault(batchSize)).optEpochs((Integer) getOrDefault(epochs))
        .optMaxSteps((Long) getOrDefault(maxSteps))
        .optConsistency(io.sparkps.ps.Consistency.valueOf(getOrDefault(consistency)))
        .optStaleness((Integer) getOrDefault(staleness)).optStalenessAwareRate((Boolean) getOrDefault(stalenessAwareRate))
        .optAsyncTables((Boolean) getOrDefault(asyncTables))
        .optSeed((Long) getOrDefault(seed)).optCheckpointDir(isDefined(checkpointDir) ? getOrDefault(checkpointDir) : null)
        .optCheckpointInterval((Integer) getOrDefault(checkpointInterval))
        .optCheckpointsKept((Integer) getOrDefault(checkpointsKept))
        .optGradientAccumulation((Integer) getOrDefault(gradientAccumulation))
        .optBf16Transfers((Boolean) getOrDefault(bf16Transfers)).optSparseDensity((Double) getOrDefault(sparseDensity))
        .optEvalEverySeconds((Double) getOrDefault(evalEverySeconds)).optEvalDeferred((Boolean) getOrDefault(evalDeferred))
        .optEmbeddingColumns(EmbeddingColumn.fromJson(getOrDefault(embeddingColumns)), getOrDefault(numericCols))
        .optFactorizationTerm((Boolean) getOrDefault(factorizationTerm)).optWidePart((Boolean) getOrDefault(widePart))
        .build();
  }

  /** The categorical columns trained as embedding tables (JSON of {@code EmbeddingColumn}s; "[]": none). */
  public Param<String> embeddingColumns() {
    return embeddingColumns;
  }

  /** With embedding columns: whether the last input is the factorization term. */
  public org.apache.spark.ml.param.BooleanParam factorizationTerm() {
    return factorizationTerm;
  }

  /** With embedding columns: whether each column's wide weight is an input too. */
  public org.apache.spark.ml.param.BooleanParam widePart() {
    return widePart;
  }

  /** With embedding columns: the numeric columns read after the pooled embeddings. */
  public org.apache.spark.ml.param.StringArrayParam numericCols() {
    return numericCols;
  }

  /** The embedding model's inputs, or null when the network reads {@code featuresCol}. */
  io.sparkps.ml.embedding.EmbeddingInputs embeddingInputs() {
    TrainingConfig c = getConfig();
    return c.hasEmbeddings() ? new io.sparkps.ml.embedding.EmbeddingInputs(c.embeddingColumns(), c.numericCols(),
        c.factorizationTerm(), c.widePart()) : null;
  }

  /** The input features column (vector or array of numbers). */
  public Param<String> featuresCol() {
    return featuresCol;
  }

  /** The label column (class index or one-hot vector for classifiers, number or vector for regressors). */
  public Param<String> labelCol() {
    return labelCol;
  }

  /** The output column of the predicted class. */
  public Param<String> predictionCol() {
    return predictionCol;
  }

  /** The output column of the class probabilities. */
  public Param<String> probabilityCol() {
    return probabilityCol;
  }

  /** The output column of the raw outputs (before the output layer's activation; classifiers only). */
  public Param<String> rawPredictionCol() {
    return rawPredictionCol;
  }

  /** Steps per worker in all, instead of epochs (0: run epochs). */
  public LongParam maxSteps() {
    return maxSteps;
  }

  /** Where training saves checkpoints and resumes from. */
  public Param<String> checkpointDir() {
    return checkpointDir;
  }

  /** Steps between checkpoints. */
  public IntParam checkpointInterval() {
    return checkpointInterval;
  }

  /** The number of checkpoints kept (default 3): older ones are deleted once a newer one is complete. */
  public IntParam checkpointsKept() {
    return checkpointsKept;
  }

  /** The network: a DL4J MultiLayerConfiguration or ComputationGraphConfiguration as JSON. */
  public Param<String> networkJson() {
    return networkJson;
  }

  /** A preset network sized to the data when fitting (used when networkJson is not set). */
  public Param<String> network() {
    return network;
  }

  /** Workers (the chief included). */
  public IntParam numWorkers() {
    return numWorkers;
  }

  /** Parameter servers. */
  public IntParam numPs() {
    return numPs;
  }

  /** Examples per minibatch and worker. */
  public IntParam batchSize() {
    return batchSize;
  }

  /** Passes over the data. */
  public IntParam epochs() {
    return epochs;
  }

  /** ASYNC, SYNC or SSP. */
  public Param<String> consistency() {
    return consistency;
  }

  /** SSP's staleness bound. */
  public IntParam staleness() {
    return staleness;
  }

  /** Seed of the minibatch shuffles. */
  public LongParam seed() {
    return seed;
  }

  /** Seconds between evaluations at the least. */
  public org.apache.spark.ml.param.DoubleParam evalEverySeconds() {
    return evalEverySeconds;
  }

  /** Whether gradients and parameters travel as bfloat16 between executors. */
  public org.apache.spark.ml.param.BooleanParam bf16Transfers() {
    return bf16Transfers;
  }

  /** ASYNC and SSP: whether gradients are applied at a rate divided by 1 + their staleness. */
  public org.apache.spark.ml.param.DoubleParam sparseDensity() {
    return sparseDensity;
  }

  /** Minibatches whose mean gradient a worker pushes as one step. */
  public IntParam gradientAccumulation() {
    return gradientAccumulation;
  }

  public org.apache.spark.ml.param.BooleanParam stalenessAwareRate() {
    return stalenessAwareRate;
  }

  /** With embedding columns: whether the tables are ASYNC whatever the dense part's consistency. */
  public org.apache.spark.ml.param.BooleanParam asyncTables() {
    return asyncTables;
  }

  /** Whether the evaluator scores its copies of the variables only after training. */
  public org.apache.spark.ml.param.BooleanParam evalDeferred() {
    return evalDeferred;
  }

  @Override
  public String uid() {
    return uid;
  }

}
