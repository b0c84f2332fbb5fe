package io.sparkps.ml;

import io.sparkps.ml.data.Schemas;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ps.spec.Consistency;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.ml.util.Identifiable$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML {@code Estimator} that trains a DL4J {@code MultiLayerConfiguration} (held as JSON)
 * on a DataFrame with SparkPS (workers in a barrier stage, variables on parameter servers), and
 * returns a {@link Dl4jModel}. Every setting is a Spark {@code Param}, so {@code explainParams},
 * {@code copy} and persistence work.
 */
public final class Dl4jEstimator extends Dl4jEstimatorParams implements DefaultParamsWritable {
  private static final long serialVersionUID = 1L;

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
    super(uid);
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

  /**
   * Sets every training option of {@code config} (all but the network and the output columns):
   * the one place where a {@link TrainingConfig} becomes this estimator's Params.
   */
  public Dl4jEstimator setConfig(TrainingConfig config) {
    putConfig(config, this::set);
    if (config.checkpointDir() == null) {
      clear(checkpointDir);
    } else {
      set(checkpointDir, config.checkpointDir());
    }
    return this;
  }

  /**
   * Trains an embedding model: each of {@code columns} (categorical, see {@link
   * io.sparkps.ml.param.EmbeddingColumn}) looks its ids up in a table on the parameter servers,
   * and the network's input is their pooled rows followed by {@code numericCols}; the network's
   * first layer must take {@code sum of dims + numericCols.length} inputs. featuresCol is then unused.
   */
  public Dl4jEstimator setEmbeddingColumns(java.util.List<io.sparkps.ml.param.EmbeddingColumn> columns,
      String... numericCols) {
    set(embeddingColumns, io.sparkps.ml.param.EmbeddingColumn.toJson(columns));
    set(this.numericCols, numericCols);
    return this;
  }

  /**
   * With embedding columns: adds one last input to the network, the sum over every pair of columns
   * of their pooled embeddings' dot product (DeepFM's factorization machine term, its gradient
   * reaching every column's rows); the network's first layer then takes one input more, and the
   * columns need one dim.
   */
  public Dl4jEstimator setFactorizationTerm(boolean on) {
    set(factorizationTerm, on);
    return this;
  }

  /**
   * With embedding columns: gives each column a 1-dimensional embedding too, a weight per id learned
   * in one more table (Wide &amp; Deep's wide part; new rows 0), and the network one input per column
   * after the numeric ones: the column's pooled weight. {@link io.sparkps.ml.embedding.WideAndDeep}
   * builds a graph that adds them to its output, beside the deep layers.
   */
  public Dl4jEstimator setWidePart(boolean on) {
    set(widePart, on);
    return this;
  }

  /**
   * With embedding columns: the tables apply each worker's row gradients at once (ASYNC) while the
   * dense part keeps the run's consistency, so a SYNC run's table pulls never wait for the other
   * workers' pushes (each row moves by each worker's gradient in turn, not by their mean).
   */
  public Dl4jEstimator setAsyncTables(boolean on) {
    set(asyncTables, on);
    return this;
  }

  /** Sets the least time between evaluations. */
  public Dl4jEstimator setEvalEverySeconds(double seconds) {
    set(evalEverySeconds, seconds);
    return this;
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

  /**
   * ASYNC and SSP: sparse transfers with error feedback. Each worker runs DL4J's updaters itself
   * (as {@code fit} would) and pushes, of each variable of 4,096 elements or more, the
   * {@code density} fraction of its update's elements of largest magnitude once what earlier
   * pushes left out is added back (kept on the worker: nothing is lost, only delayed); the shards
   * keep no optimizer and subtract what comes. Each pull receives the elements that moved most
   * since the worker's last pull, up to {@code density} times the number of workers (the ps keeps
   * a copy of what each worker holds). Pairs of an index and a float32 value travel. 0 (the
   * default) is dense. The workers' optimizer state is not in checkpoints (a resumed run restarts
   * it), and the staleness-aware rate does not apply. Not with SYNC, whose workers must compute
   * from the same values, nor with bf16.
   */
  public Dl4jEstimator setSparseTransfers(double density) {
    set(sparseDensity, density);
    return this;
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

  /**
   * Gradient accumulation: each worker computes the gradients of {@code minibatches} minibatches
   * from the values of one pull and pushes their mean as one step, so the workers synchronize
   * (SYNC) and transfer once per {@code minibatches} minibatches. One step then takes
   * {@code minibatches x batchSize} examples per worker; with one worker and SYNC it equals DL4J's
   * {@code fit} on minibatches that many times larger. Fewer, larger steps: less time on the
   * network, but fewer updates per epoch. {@code maxSteps}, {@code checkpointInterval} and progress
   * still count minibatches (a checkpoint is taken at the first step boundary at or after each
   * interval). 1 (the default) pushes every minibatch. Not with sparse transfers.
   */
  public Dl4jEstimator setGradientAccumulation(int minibatches) {
    set(gradientAccumulation, minibatches);
    return this;
  }

  /** Sets the minibatches per worker in all (0: run epochs). */
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

  /**
   * Sets the MLflow tracking server a fit logs to (http(s)://host:port): its params, every step's
   * metrics and its end (docs/observability.md, MLflow). Empty: {@code MLFLOW_TRACKING_URI}, and no
   * tracking when that is unset.
   */
  public Dl4jEstimator setMlflowTrackingUri(String uri) {
    set(mlflowTrackingUri, uri);
    return this;
  }

  /**
   * Sets a Hadoop path where a fit writes TensorBoard event files: every recorded step's metrics and
   * the evaluations as scalars, in a subdirectory named by the SparkPS run's id ({@link
   * FitJob#runId()}), one per fit. Empty: none.
   */
  public Dl4jEstimator setTensorboardLogDir(String dir) {
    set(tensorboardLogDir, dir);
    return this;
  }

  /**
   * Sets the chief's steps between histograms of the network's variables in the TensorBoard files
   * ({@code params/<variable>}), read from the parameter servers as training goes; 0: none. Default
   * 100.
   */
  public Dl4jEstimator setTensorboardHistogramSteps(int steps) {
    set(tensorboardHistogramSteps, steps);
    return this;
  }

  /** Sets the MLflow experiment of a tracked fit (created when missing). */
  public Dl4jEstimator setMlflowExperimentName(String name) {
    set(mlflowExperimentName, name);
    return this;
  }

  /** Sets the name of a tracked fit's MLflow run. */
  public Dl4jEstimator setMlflowRunName(String name) {
    set(mlflowRunName, name);
    return this;
  }

  /**
   * Sets an MLflow run that exists, which a fit logs into (its metrics, the settings the run lacks,
   * the model) and leaves to its owner to end; the Python estimator sets it to the active run. Empty:
   * {@code MLFLOW_RUN_ID}, else the fit's own run.
   */
  public Dl4jEstimator setMlflowRunId(String runId) {
    set(mlflowRunId, runId);
    return this;
  }

  /** Sets the tags of a tracked fit's MLflow run. */
  public Dl4jEstimator setMlflowTags(java.util.Map<String, String> tags) {
    set(mlflowTags, tags.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toArray(String[]::new));
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

  /**
   * Sets the network: a MultiLayerConfiguration's or ComputationGraphConfiguration's JSON, or a
   * compiled tf.keras model's JSON with its compile settings ({@link KerasNetworks}).
   */
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

  /**
   * With embedding columns: how the network reads the numeric columns, {@code LOG1P} for count-like
   * ones (sign(x) ln(1 + |x|)) or {@code NONE}; the model scores with the same.
   */
  public Dl4jEstimator setNumericTransform(io.sparkps.ml.param.NumericTransform transform) {
    set(numericTransform, transform.name());
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
          + "MultiLayerConfiguration or ComputationGraphConfiguration, or setNetwork with a preset (mlp, "
          + "mlp:H1,H2,..., lenet)");
    }
    return Net.fromJson(dl4jJson($(networkJson)));
  }

  /** {@code json} as a DL4J configuration: itself, or a Keras model's imported with this estimator's seed. */
  private String dl4jJson(String json) {
    return KerasNetworks.isKeras(json) ? KerasNetworks.toDl4jJson(json, (Long) getOrDefault(seed)) : json;
  }

  private static org.apache.hadoop.conf.Configuration hadoopConf() {
    return org.apache.spark.sql.SparkSession.getActiveSession().isDefined()
        ? org.apache.spark.sql.SparkSession.getActiveSession().get().sparkContext().hadoopConfiguration()
        : new org.apache.hadoop.conf.Configuration();
  }

  /** Whether the network is a Keras model file still to be imported. */
  private boolean kerasFile() {
    return !isDefined(networkJson) && isDefined(network) && KerasNetworks.isFileSpec($(network));
  }

  /**
   * This estimator with its network as a DL4J configuration, on the driver before any Spark job:
   * a preset sized to {@code dataset}, a Keras model (file or JSON) imported.
   */
  private Dl4jEstimator resolved(Dataset<?> dataset) {
    if (kerasFile()) {
      return copy(ParamMap.empty()).setNetworkJson(KerasNetworks.fromFileSpec($(network),
          dataset.sparkSession().sparkContext().hadoopConfiguration(), (Long) getOrDefault(seed)));
    }
    if (preset()) {
      return sized(dataset);
    }
    if (isDefined(networkJson) && KerasNetworks.isKeras($(networkJson))) {
      return copy(ParamMap.empty()).setNetworkJson(dl4jJson($(networkJson)));
    }
    return this;
  }

  /**
   * Sets a preset network, sized to the data when fitting, or {@code keras:PATH}, a compiled tf.keras
   * model's {@code .h5} file (used when networkJson is not set).
   */
  public Dl4jEstimator setNetwork(String spec) {
    set(network, spec);
    return this;
  }

  /** Whether the network is a preset still to be sized to the data. */
  private boolean preset() {
    return !isDefined(networkJson) && isDefined(network) && !KerasNetworks.isFileSpec($(network));
  }

  /**
   * This estimator with the preset network sized to {@code dataset}: its features' width (the first
   * row's) and its label's classes (the largest class index + 1).
   */
  private Dl4jEstimator sized(Dataset<?> dataset) {
    Schemas.labelKind(dataset.schema(), $(labelCol), true, 2);
    Schemas.requireColumn(dataset.schema(), $(featuresCol), "features");
    Row first = dataset.select($(featuresCol)).head();
    Object v = first.get(0);
    long inputs = v instanceof org.apache.spark.ml.linalg.Vector vector ? vector.size()
        : v instanceof scala.collection.Seq<?> seq ? seq.size() : -1;
    if (inputs < 1) {
      throw new IllegalArgumentException("network " + $(network) + ": the features column '" + $(featuresCol) + "' "
          + "holds " + v + " in its first row, not a vector of values to size the network by");
    }
    Row top = dataset.agg(org.apache.spark.sql.functions.max(org.apache.spark.sql.functions.col($(labelCol)))).head();
    if (top.isNullAt(0) || !(top.get(0) instanceof Number n) || n.doubleValue() < 0) {
      throw new IllegalArgumentException("network " + $(network) + ": the label column '" + $(labelCol) + "' must "
          + "hold class indexes (0, 1, ...) for a preset network; give networkJson for one-hot labels");
    }
    int classes = Math.max(2, (int) n.doubleValue() + 1);
    return copy(ParamMap.empty()).setNetworkJson(NetworkPresets.json($(network), inputs, classes, (Long) getOrDefault(seed), 1e-3));
  }

  @Override
  public StructType transformSchema(StructType schema) {
    if (preset()) { // a classifier whatever its size: any 2 classes and a width the preset takes give its schema
      return transformSchema(schema, Net.fromJson(NetworkPresets.json($(network), 784, 2, 0, 1e-3)));
    }
    if (kerasFile()) {
      return transformSchema(schema, Net.fromJson(KerasNetworks.fromFileSpec($(network), hadoopConf())));
    }
    return transformSchema(schema, probe());
  }

  /** The output schema for {@code net} (built from networkJson), checking the label column against it. */
  StructType transformSchema(StructType schema, Net net) {
    Schemas.labelKind(schema, $(labelCol), net.classification(), net.outputs());
    Schemas.Outputs outputs = new Schemas.Outputs(net.classification(), net.outputs(), $(predictionCol),
        $(probabilityCol), $(rawPredictionCol));
    io.sparkps.ml.embedding.EmbeddingInputs inputs = embeddingInputs();
    if (inputs != null) {
      inputs.check(schema);
      return Schemas.addOutputs(schema, outputs);
    }
    return Schemas.withPredictions(schema, $(featuresCol), outputs);
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
    FitJob job = fitAsync(dataset, evaluationData);
    try {
      return job.join();
    } catch (InterruptedException e) {
      // The caller gave up on the fit (a cancelled Spark Connect operation, an interrupted notebook
      // cell): the run must not go on training without anyone to take its model.
      job.cancel();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while training: run " + job.runId() + " cancelled", e);
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
    return Fitting.start(resolved(dataset), dataset, evaluation);
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
