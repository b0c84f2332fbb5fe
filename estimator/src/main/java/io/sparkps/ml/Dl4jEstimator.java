package io.sparkps.ml;

import io.sparkps.ps.Consistency;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.ml.util.Identifiable$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML {@code Estimator} that trains a DL4J {@code MultiLayerConfiguration} (held as JSON)
 * on a DataFrame with SparkPS (workers in a barrier stage, variables on parameter servers), and
 * returns a {@link Dl4jModel}. Every setting is a Spark {@code Param}, so {@code explainParams},
 * {@code copy} and persistence work.
 */
public final class Dl4jEstimator extends Estimator<Dl4jModel> implements DefaultParamsWritable {
  private static final long serialVersionUID = 1L;
  private final String uid;

  private final Param<String> featuresCol;
  private final Param<String> labelCol;
  private final Param<String> predictionCol;
  private final Param<String> probabilityCol;
  private final Param<String> rawPredictionCol;
  private final Param<String> networkJson;
  private final IntParam numWorkers;
  private final IntParam numPs;
  private final IntParam batchSize;
  private final IntParam epochs;
  private final LongParam maxSteps;
  private final Param<String> checkpointDir;
  private final IntParam checkpointInterval;
  private final IntParam checkpointsKept;
  private final Param<String> consistency;
  private final IntParam staleness;
  private final LongParam seed;
  private final org.apache.spark.ml.param.DoubleParam evalEverySeconds;
  private final org.apache.spark.ml.param.BooleanParam evalDeferred;
  private final org.apache.spark.ml.param.BooleanParam stalenessAwareRate;
  private final org.apache.spark.ml.param.BooleanParam bf16Transfers;
  /** The specs of the Experiment this estimator was made from, for the model's provenance. */
  /** The Experiment's specs this estimator was made from, recorded in the model's provenance. */
  java.util.Map<String, String> experimentRecord = java.util.Map.of();
  /** Held-out rows every fit evaluates (driver-side; not a param, not saved). */
  private transient Dataset<?> evaluationData;
  /** Listeners attached to every fit of this estimator (driver-side; not params, not saved). */
  private transient java.util.List<io.sparkps.spark.ProgressListener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

  /** An estimator with a random uid and the defaults. */
  public Dl4jEstimator() {
    this(Identifiable$.MODULE$.randomUID("dl4jEstimator"));
  }

  /** An estimator with {@code uid} (used when loading). */
  public Dl4jEstimator(String uid) {
    this.uid = uid;
    featuresCol = new Param<>(this, "featuresCol", "features column name");
    labelCol = new Param<>(this, "labelCol", "label column name (class index or one-hot vector for classifiers, "
        + "number or vector for regressors)");
    predictionCol = new Param<>(this, "predictionCol", "prediction column name");
    probabilityCol = new Param<>(this, "probabilityCol", "class probabilities column name");
    rawPredictionCol = new Param<>(this, "rawPredictionCol", "raw output (before the output activation) column name");
    networkJson = new Param<>(this, "networkJson", "the DL4J MultiLayerConfiguration or ComputationGraphConfiguration "
        + "as JSON");
    numWorkers = new IntParam(this, "numWorkers", "workers, the chief included (>= 1)", ParamValidators.gtEq(1));
    numPs = new IntParam(this, "numPs", "parameter servers (>= 1)", ParamValidators.gtEq(1));
    batchSize = new IntParam(this, "batchSize", "examples per minibatch and worker (>= 1)", ParamValidators.gtEq(1));
    epochs = new IntParam(this, "epochs", "passes over the data (>= 1; unused when maxSteps is set)",
        ParamValidators.gtEq(1));
    maxSteps = new LongParam(this, "maxSteps", "steps per worker in all (>= 1), instead of epochs; 0 to run epochs",
        ParamValidators.gtEq(0));
    checkpointDir = new Param<>(this, "checkpointDir", "Hadoop path where training saves checkpoints and resumes "
        + "from the latest one (unset: no checkpoints)");
    checkpointInterval = new IntParam(this, "checkpointInterval", "steps between checkpoints (>= 1)",
        ParamValidators.gtEq(1));
    checkpointsKept = new IntParam(this, "checkpointsKept", "checkpoints kept, the newest (>= 1)", ParamValidators.gtEq(1));
    consistency = new Param<>(this, "consistency", "ASYNC, SYNC or SSP",
        ParamValidators.inArray(new String[] {"ASYNC", "SYNC", "SSP"}));
    staleness = new IntParam(this, "staleness", "SSP staleness bound (>= 0)", ParamValidators.gtEq(0));
    seed = new LongParam(this, "seed", "seed of the minibatch shuffles");
    evalEverySeconds = new org.apache.spark.ml.param.DoubleParam(this, "evalEverySeconds",
        "seconds between evaluations at the least (> 0)", ParamValidators.gt(0));
    setDefault(evalEverySeconds, 1.0);
    evalDeferred = new org.apache.spark.ml.param.BooleanParam(this, "evalDeferred", "whether the evaluator only "
        + "copies the variables while training runs and scores the copies after it (no cores taken from training)");
    setDefault(evalDeferred, false);
    stalenessAwareRate = new org.apache.spark.ml.param.BooleanParam(this, "stalenessAwareRate", "ASYNC and SSP: "
        + "whether each gradient is applied at the learning rate divided by 1 + its staleness (the updates other "
        + "workers made since it was computed)");
    setDefault(stalenessAwareRate, false);
    bf16Transfers = new org.apache.spark.ml.param.BooleanParam(this, "bf16Transfers", "whether gradients and "
        + "parameters travel as bfloat16 between executors (half the bytes; the ps keeps float32)");
    setDefault(bf16Transfers, false);
    setDefault(featuresCol, "features");
    setDefault(labelCol, "label");
    setDefault(predictionCol, "prediction");
    setDefault(probabilityCol, "probability");
    setDefault(rawPredictionCol, "rawPrediction");
    setDefault(maxSteps, 0L);
    setDefault(checkpointInterval, 100);
    setDefault(checkpointsKept, 3);
    setDefault(numWorkers, 2);
    setDefault(numPs, 1);
    setDefault(batchSize, 64);
    setDefault(epochs, 1);
    setDefault(consistency, "SYNC");
    setDefault(staleness, 2);
    setDefault(seed, 0L);
  }

  /** An estimator with the network, specs and cluster of {@code experiment} (its inputs are not used). */
  public static Dl4jEstimator fromExperiment(Experiment experiment) {
    return experiment.estimator();
  }

  /**
   * Adds a listener that receives every progress report of each fit (workers' steps and losses,
   * the evaluator's metrics), live on the driver, and the end of the run.
   */
  public Dl4jEstimator addListener(io.sparkps.spark.ProgressListener listener) {
    if (listeners == null) {
      listeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    }
    listeners.add(listener);
    return this;
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

  /** Sets the least time between evaluations. */
  public Dl4jEstimator setEvalEverySeconds(double seconds) {
    set(evalEverySeconds, seconds);
    return this;
  }

  /** Whether gradients and parameters travel as bfloat16 between executors. */
  public org.apache.spark.ml.param.BooleanParam bf16Transfers() {
    return bf16Transfers;
  }

  /**
   * Gradients pushed and parameters pulled as bfloat16 over the ps shards' bulk ports (transfers
   * of 1 MiB and more per shard between executors): half the bytes on the network, each value
   * rounded to 8 bits of mantissa on the way. The shards keep and update float32; transfers
   * through memory (a ps in the worker's JVM, as in {@code local[N]}) and small ones over gRPC
   * stay float32. Each worker reports its bytes on the sockets as the metric {@code wireBytes}.
   */
  public Dl4jEstimator setBf16Transfers(boolean on) {
    set(bf16Transfers, on);
    return this;
  }

  /** ASYNC and SSP: whether gradients are applied at a rate divided by 1 + their staleness. */
  public org.apache.spark.ml.param.BooleanParam stalenessAwareRate() {
    return stalenessAwareRate;
  }

  /**
   * ASYNC and SSP: applies each gradient at the learning rate divided by 1 + its staleness, the
   * updates other workers made between the pull it was computed from and its arrival (staleness-
   * aware asynchronous SGD). With N workers taking turns that is about N, so a step moves the
   * weights about as far per example as a SYNC step; ignored for SYNC.
   */
  public Dl4jEstimator setStalenessAwareRate(boolean on) {
    set(stalenessAwareRate, on);
    return this;
  }

  /** Whether the evaluator scores its copies of the variables only after training. */
  public org.apache.spark.ml.param.BooleanParam evalDeferred() {
    return evalDeferred;
  }

  /**
   * Makes the evaluator copy the variables every {@link #evalEverySeconds} while training runs and
   * score the copies only once training has stopped, so that scoring takes no cores from training.
   * Each of its reports then carries {@code takenAtMillis}, when its copy was read (wall clock, ms).
   * The copies are held in the evaluator's memory, 256 MiB at most: when that fills, every second
   * copy is dropped and the interval doubles.
   */
  public Dl4jEstimator setEvalDeferred(boolean deferred) {
    set(evalDeferred, deferred);
    return this;
  }

  @Override
  public String uid() {
    return uid;
  }

  /** Sets the steps per worker in all (0: run epochs). */
  public Dl4jEstimator setMaxSteps(long steps) {
    set(maxSteps, steps);
    return this;
  }

  /** Sets the checkpoint directory (a Hadoop path): training saves there and resumes from the latest checkpoint. */
  public Dl4jEstimator setCheckpointDir(String dir) {
    set(checkpointDir, dir);
    return this;
  }

  /** Sets the steps between checkpoints. */
  public Dl4jEstimator setCheckpointInterval(int steps) {
    set(checkpointInterval, steps);
    return this;
  }

  /** Sets how many of the newest checkpoints are kept. */
  public Dl4jEstimator setCheckpointsKept(int n) {
    set(checkpointsKept, n);
    return this;
  }

  /** Sets the staleness bound of SSP. */
  public Dl4jEstimator setStaleness(int bound) {
    set(staleness, bound);
    return this;
  }

  /** Sets the output columns: predicted class or value, class probabilities, raw outputs. */
  public Dl4jEstimator setOutputCols(String prediction, String probability, String rawPrediction) {
    set(predictionCol, prediction);
    set(probabilityCol, probability);
    set(rawPredictionCol, rawPrediction);
    return this;
  }

  /** Sets the network (a MultiLayerConfiguration's or ComputationGraphConfiguration's JSON). */
  public Dl4jEstimator setNetworkJson(String json) {
    set(networkJson, json);
    return this;
  }

  /** Sets the number of workers. */
  public Dl4jEstimator setNumWorkers(int n) {
    set(numWorkers, (Object) n);
    return this;
  }

  /** Sets the number of parameter servers. */
  public Dl4jEstimator setNumPs(int n) {
    set(numPs, n);
    return this;
  }

  /** Sets the minibatch size per worker. */
  public Dl4jEstimator setBatchSize(int n) {
    set(batchSize, n);
    return this;
  }

  /** Sets the number of epochs. */
  public Dl4jEstimator setEpochs(int n) {
    set(epochs, n);
    return this;
  }

  /** Sets the consistency mode. */
  public Dl4jEstimator setConsistency(Consistency c) {
    set(consistency, c.name());
    return this;
  }

  /** Sets the features column. */
  public Dl4jEstimator setFeaturesCol(String col) {
    set(featuresCol, col);
    return this;
  }

  /** Sets the label column. */
  public Dl4jEstimator setLabelCol(String col) {
    set(labelCol, col);
    return this;
  }

  /** Sets the shuffling seed. */
  public Dl4jEstimator setSeed(long s) {
    set(seed, s);
    return this;
  }

  Net probe() {
    if (!isDefined(networkJson)) {
      throw new IllegalArgumentException("networkJson is not set: setNetworkJson(conf.toJson()) with a DL4J "
          + "MultiLayerConfiguration or ComputationGraphConfiguration");
    }
    return Net.fromJson($(networkJson));
  }

  @Override
  public StructType transformSchema(StructType schema) {
    return transformSchema(schema, probe());
  }

  /** The output schema for {@code net} (built from networkJson), checking the label column against it. */
  StructType transformSchema(StructType schema, Net net) {
    Schemas.labelKind(schema, $(labelCol), net.classification(), net.outputs());
    return Schemas.withPredictions(schema, $(featuresCol), new Schemas.Outputs(net.classification(), net.outputs(),
        $(predictionCol), $(probabilityCol), $(rawPredictionCol)));
  }

  /**
   * Held-out rows (the training data's columns) the evaluator scores as every {@link #fit}, a
   * Pipeline's included, advances; null for none. Driver-side: not a Param, not saved.
   */
  public Dl4jEstimator setEvaluationData(Dataset<?> evaluation) {
    this.evaluationData = evaluation;
    return this;
  }

  @Override
  public Dl4jModel fit(Dataset<?> dataset) {
    try {
      return fitAsync(dataset, evaluationData).join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while training", e);
    }
  }

  /** Starts training and returns at once with the job (status, progress, cancel, get). */
  public FitJob fitAsync(Dataset<?> dataset) {
    return fitAsync(dataset, null);
  }

  /**
   * Starts training with an evaluator that scores {@code evaluation} (same columns as the training
   * data; collected to the driver, so keep it to a held-out sample) as training advances; its
   * history is in the model's {@link Dl4jModel#summary()}.
   */
  public FitJob fitAsync(Dataset<?> dataset, Dataset<?> evaluation) {
    return Fitting.start(this, dataset, evaluation);
  }

  /** The listeners to attach to each fit (none after Java deserialization: they stay with the driver's instance). */
  java.util.List<io.sparkps.spark.ProgressListener> listeners() {
    return listeners == null ? java.util.List.of() : listeners;
  }

  /** The Experiment's specs this estimator was made from, for the provenance. */
  java.util.Map<String, String> experimentRecord() {
    return experimentRecord;
  }

  @Override
  public Dl4jEstimator copy(ParamMap extra) {
    Dl4jEstimator copy = defaultCopy(extra);
    copy.experimentRecord = experimentRecord;
    copy.evaluationData = evaluationData;
    if (listeners != null) {
      copy.listeners.addAll(listeners);
    }
    return copy;
  }

  /** Reads an estimator saved with {@code write().save(path)}. */
  public static MLReader<Dl4jEstimator> read() {
    return new DefaultParamsReader<>();
  }

  /** Loads an estimator saved at {@code path}. */
  public static Dl4jEstimator load(String path) {
    return read().load(path);
  }
}
