package io.sparkps.ml;

import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.param.TrainingConfigBuilder;
import io.sparkps.ml.param.TrainingOption;
import io.sparkps.ml.param.TrainingOptions;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;

/**
 * The settings of a {@link Dl4jEstimator}: every one a Spark {@code Param} with its default and
 * validator, and their accessors. The estimator adds the setters, fitting and persistence.
 */
public abstract class Dl4jEstimatorParams extends Estimator<Dl4jModel> {
  private static final long serialVersionUID = 1L;
  private final String uid;
  /** Each training option's Param, by name, made from its declaration ({@link TrainingOptions}). */
  private final java.util.Map<String, Param<?>> options = new java.util.LinkedHashMap<>();


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
  final Param<String> numericTransform;
  final org.apache.spark.ml.param.BooleanParam factorizationTerm;
  final org.apache.spark.ml.param.BooleanParam widePart;
  final Param<String> mlflowTrackingUri;
  final Param<String> mlflowExperimentName;
  final Param<String> mlflowRunName;
  final Param<String> mlflowRunId;
  final org.apache.spark.ml.param.StringArrayParam mlflowTags;
  final Param<String> tensorboardLogDir;
  final IntParam tensorboardHistogramSteps;

  /** Declares every param of an estimator with {@code uid}, with its default. */
  Dl4jEstimatorParams(String uid) {
    this.uid = uid;
    for (TrainingOption<?> o : TrainingOptions.ALL) {
      options.put(o.name(), param(o));
    }
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
    checkpointDir = new Param<>(this, "checkpointDir", "Hadoop path where training saves checkpoints and resumes "
        + "from the latest one (unset: a directory of the fit's own that every executor shares, deleted when the fit "
        + "ends; 'none': no checkpoints)");
    mlflowTrackingUri = new Param<>(this, "mlflowTrackingUri", "the MLflow tracking server a fit logs its params, "
        + "metrics and end to, http(s)://host:port (empty: MLFLOW_TRACKING_URI, and no tracking when that is unset)");
    mlflowExperimentName = new Param<>(this, "mlflowExperimentName", "the MLflow experiment of a tracked fit, "
        + "created when missing (empty: MLFLOW_EXPERIMENT_NAME, else Default)");
    mlflowRunName = new Param<>(this, "mlflowRunName", "the name of a tracked fit's MLflow run (empty: MLflow names "
        + "it)");
    mlflowRunId = new Param<>(this, "mlflowRunId", "an MLflow run that exists, which a fit logs into and leaves to its "
        + "owner to end (empty: MLFLOW_RUN_ID, else a run of its own; Python sets it to the active run)");
    mlflowTags = new org.apache.spark.ml.param.StringArrayParam(this, "mlflowTags", "tags of a tracked fit's MLflow "
        + "run, each key=value", (scala.Function1<String[], Object>) tags -> java.util.Arrays.stream(tags)
            .allMatch(t -> t.indexOf('=') > 0));
    tensorboardLogDir = new Param<>(this, "tensorboardLogDir", "a Hadoop path where a fit writes TensorBoard event "
        + "files, in a subdirectory named by its SparkPS run id (empty: none)");
    tensorboardHistogramSteps = new IntParam(this, "tensorboardHistogramSteps", "with tensorboardLogDir, the chief's "
        + "steps between histograms of the network's variables, read from the parameter servers (0: none)",
        (scala.Function1<Object, Object>) v -> (Integer) v >= 0);
    featuresCol = option("featuresCol");
    labelCol = option("labelCol");
    numWorkers = option("numWorkers");
    numPs = option("numPs");
    batchSize = option("batchSize");
    epochs = option("epochs");
    maxSteps = option("maxSteps");
    consistency = option("consistency");
    staleness = option("staleness");
    stalenessAwareRate = option("stalenessAwareRate");
    asyncTables = option("asyncTables");
    seed = option("seed");
    checkpointInterval = option("checkpointInterval");
    checkpointsKept = option("checkpointsKept");
    gradientAccumulation = option("gradientAccumulation");
    bf16Transfers = option("bf16Transfers");
    sparseDensity = option("sparseDensity");
    evalEverySeconds = option("evalEverySeconds");
    evalDeferred = option("evalDeferred");
    embeddingColumns = option("embeddingColumns");
    numericCols = option("numericCols");
    numericTransform = option("numericTransform");
    factorizationTerm = option("factorizationTerm");
    widePart = option("widePart");
    setDefault(mlflowTrackingUri, "");
    setDefault(mlflowExperimentName, "");
    setDefault(mlflowRunName, "");
    setDefault(mlflowRunId, "");
    setDefault(mlflowTags, new String[0]);
    setDefault(tensorboardLogDir, "");
    setDefault(tensorboardHistogramSteps, 100);
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
    for (TrainingOption<?> o : TrainingOptions.ALL) {
      put(to, options.get(o.name()), o.paramValue(config));
    }
  }

  @SuppressWarnings("unchecked")
  private static <T> void put(ParamSink to, Param<T> param, Object value) {
    to.put(param, (T) value);
  }

  /** The Param of option {@code o}: its name, its doc and its check (its builder method's), of the type its form says. */
  private Param<?> param(TrainingOption<?> o) {
    scala.Function1<Object, Object> valid = o::valid;
    return switch (o.form()) {
      case STRING -> o.checkedOnSet()
          ? new Param<String>(this, o.name(), o.doc(), (scala.Function1<String, Object>) o::valid)
          : new Param<String>(this, o.name(), o.doc());
      case INT -> new IntParam(this, o.name(), o.doc(), valid);
      case LONG -> new LongParam(this, o.name(), o.doc(), valid);
      case DOUBLE -> new org.apache.spark.ml.param.DoubleParam(this, o.name(), o.doc(), valid);
      case BOOLEAN -> new org.apache.spark.ml.param.BooleanParam(this, o.name(), o.doc());
      case STRINGS -> new org.apache.spark.ml.param.StringArrayParam(this, o.name(), o.doc(),
          (scala.Function1<String[], Object>) o::valid);
    };
  }

  @SuppressWarnings("unchecked")
  private <P> P option(String name) {
    return (P) options.get(name);
  }

  /**
   * The training options as set (or defaulted) here, all but the network and the output columns:
   * the one place where this estimator's Params become a {@link TrainingConfig}. Options that do
   * not go together are refused here, naming them.
   */
  public TrainingConfig getConfig() {
    TrainingConfigBuilder b = TrainingConfig.builder();
    for (TrainingOption<?> o : TrainingOptions.ALL) {
      o.setParamValue(b, getOrDefault(options.get(o.name())));
    }
    return b.optCheckpointDir(isDefined(checkpointDir) ? getOrDefault(checkpointDir) : null).build();
  }

  /** The categorical columns trained as embedding tables (JSON of {@code EmbeddingColumn}s; "[]": none). */
  public Param<String> embeddingColumns() {
    return embeddingColumns;
  }

  /** With embedding columns: how the network reads the numeric columns (NONE or LOG1P). */
  public Param<String> numericTransform() {
    return numericTransform;
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
        c.factorizationTerm(), c.widePart(), c.numericTransform()) : null;
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

  /** The MLflow tracking server's URI (empty: {@code MLFLOW_TRACKING_URI}, else no tracking). */
  public Param<String> mlflowTrackingUri() {
    return mlflowTrackingUri;
  }

  /** The MLflow experiment's name (empty: {@code MLFLOW_EXPERIMENT_NAME}, else Default). */
  public Param<String> mlflowExperimentName() {
    return mlflowExperimentName;
  }

  /** The MLflow run's name (empty: MLflow names it). */
  public Param<String> mlflowRunName() {
    return mlflowRunName;
  }

  /** An MLflow run that exists, which a fit logs into (empty: MLFLOW_RUN_ID, else its own run). */
  public Param<String> mlflowRunId() {
    return mlflowRunId;
  }

  /** The MLflow run's tags, each {@code key=value}. */
  public org.apache.spark.ml.param.StringArrayParam mlflowTags() {
    return mlflowTags;
  }

  /** Where a fit writes TensorBoard event files (empty: none). */
  public Param<String> tensorboardLogDir() {
    return tensorboardLogDir;
  }

  /** The chief's steps between histograms of the network's variables in TensorBoard (0: none). */
  public IntParam tensorboardHistogramSteps() {
    return tensorboardHistogramSteps;
  }

  /** Where a fit is tracked: these Params, each left empty taken from the environment. */
  io.sparkps.ml.tracking.MlflowTracking.Settings tracking(java.util.Map<String, String> env) {
    java.util.Map<String, String> tags = new java.util.LinkedHashMap<>();
    for (String t : getOrDefault(mlflowTags)) {
      tags.put(t.substring(0, t.indexOf('=')), t.substring(t.indexOf('=') + 1));
    }
    return io.sparkps.ml.tracking.MlflowTracking.Settings.of(getOrDefault(mlflowTrackingUri),
        getOrDefault(mlflowExperimentName), getOrDefault(mlflowRunName), tags, getOrDefault(mlflowRunId), env);
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
