package io.sparkps.ml;

import io.sparkps.ps.Consistency;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.TrainingJob;
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
import org.apache.spark.sql.Row;
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
  private final Param<String> networkJson;
  private final IntParam numWorkers;
  private final IntParam numPs;
  private final IntParam batchSize;
  private final IntParam epochs;
  private final Param<String> consistency;
  private final IntParam staleness;
  private final LongParam seed;
  private final org.apache.spark.ml.param.DoubleParam evalEverySeconds;

  /** An estimator with a random uid and the defaults. */
  public Dl4jEstimator() {
    this(Identifiable$.MODULE$.randomUID("dl4jEstimator"));
  }

  /** An estimator with {@code uid} (used when loading). */
  public Dl4jEstimator(String uid) {
    this.uid = uid;
    featuresCol = new Param<>(this, "featuresCol", "features column name");
    labelCol = new Param<>(this, "labelCol", "label column name (class index)");
    predictionCol = new Param<>(this, "predictionCol", "prediction column name");
    probabilityCol = new Param<>(this, "probabilityCol", "class probabilities column name");
    networkJson = new Param<>(this, "networkJson", "the DL4J MultiLayerConfiguration as JSON");
    numWorkers = new IntParam(this, "numWorkers", "workers, the chief included (>= 1)", ParamValidators.gtEq(1));
    numPs = new IntParam(this, "numPs", "parameter servers (>= 1)", ParamValidators.gtEq(1));
    batchSize = new IntParam(this, "batchSize", "examples per minibatch and worker (>= 1)", ParamValidators.gtEq(1));
    epochs = new IntParam(this, "epochs", "passes over the data (>= 1)", ParamValidators.gtEq(1));
    consistency = new Param<>(this, "consistency", "ASYNC, SYNC or SSP",
        ParamValidators.inArray(new String[] {"ASYNC", "SYNC", "SSP"}));
    staleness = new IntParam(this, "staleness", "SSP staleness bound (>= 0)", ParamValidators.gtEq(0));
    seed = new LongParam(this, "seed", "seed of the minibatch shuffles");
    evalEverySeconds = new org.apache.spark.ml.param.DoubleParam(this, "evalEverySeconds",
        "seconds between evaluations at the least (> 0)", ParamValidators.gt(0));
    setDefault(evalEverySeconds, 1.0);
    setDefault(featuresCol, "features");
    setDefault(labelCol, "label");
    setDefault(predictionCol, "prediction");
    setDefault(probabilityCol, "probability");
    setDefault(numWorkers, 2);
    setDefault(numPs, 1);
    setDefault(batchSize, 64);
    setDefault(epochs, 1);
    setDefault(consistency, "SYNC");
    setDefault(staleness, 2);
    setDefault(seed, 0L);
  }

  /** The input features column (vector or array of numbers). */
  public Param<String> featuresCol() {
    return featuresCol;
  }

  /** The label column (class index). */
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

  /** The network: a DL4J MultiLayerConfiguration as JSON. */
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

  @Override
  public String uid() {
    return uid;
  }

  /** Sets the network (a MultiLayerConfiguration's JSON). */
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

  @Override
  public StructType transformSchema(StructType schema) {
    if (!isDefined(networkJson)) {
      throw new IllegalArgumentException("networkJson is not set: setNetworkJson(conf.toJson()) with a DL4J "
          + "MultiLayerConfiguration");
    }
    Schemas.requireColumn(schema, $(labelCol), "label");
    return Schemas.withPredictions(schema, $(featuresCol), $(predictionCol), $(probabilityCol));
  }

  @Override
  public Dl4jModel fit(Dataset<?> dataset) {
    try {
      return fitAsync(dataset).join();
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
    transformSchema(dataset.schema());
    org.deeplearning4j.nn.multilayer.MultiLayerNetwork probe = Dl4jTrainer.network($(networkJson));
    InputChecks.check(dataset, $(featuresCol), $(labelCol), probe.layerInputSize(0),
        probe.layerSize(probe.getnLayers() - 1));
    ClusterSpec spec = ClusterSpec.builder().setNumPs(intOf(numPs)).setNumWorkers(intOf(numWorkers))
        .optEvaluator(evaluation != null).build();
    Dl4jTrainer.Settings settings = new Dl4jTrainer.Settings($(networkJson), $(featuresCol), $(labelCol),
        Consistency.valueOf($(consistency)), intOf(staleness), intOf(epochs), intOf(batchSize), (Long) getOrDefault(seed));
    EvalWorker evaluator = evaluation == null ? null : evalWorker(evaluation, probe);
    TrainingJob<float[]> job = Dl4jTrainer.trainAsync(dataset.sparkSession(), spec, dataset.toDF(), settings, evaluator);
    String json = $(networkJson);
    java.util.Map<String, String> provenance = Provenance.of(this, dataset.schema(), dataset.sparkSession().version());
    return new FitJob(job, result -> {
      Dl4jModel model = new Dl4jModel(uid, json, result.chief()).withProvenance(provenance)
          .withSummary(new TrainingSummary(result.workerHistory(), result.evaluatorHistory(), result.stageAttempts(),
              result.elapsed()));
      model.set(model.featuresCol(), $(featuresCol)).set(model.predictionCol(), $(predictionCol))
          .set(model.probabilityCol(), $(probabilityCol));
      return model.setParent(this);
    });
  }

  private EvalWorker evalWorker(Dataset<?> evaluation, org.deeplearning4j.nn.multilayer.MultiLayerNetwork probe) {
    transformSchema(evaluation.schema());
    int width = (int) probe.layerInputSize(0);
    int classes = (int) probe.layerSize(probe.getnLayers() - 1);
    java.util.List<Row> rows = evaluation.toDF().select($(featuresCol), $(labelCol)).collectAsList();
    io.sparkps.ml.data.Minibatches checked = io.sparkps.ml.data.Minibatches.of(rows.iterator(), -1, $(featuresCol),
        $(labelCol), width, classes);
    return new EvalWorker($(networkJson), checked.features(), checked.labels(), width, classes,
        (long) (1000 * (Double) getOrDefault(evalEverySeconds)));
  }

  @Override
  public Dl4jEstimator copy(ParamMap extra) {
    return defaultCopy(extra);
  }

  /** Reads an estimator saved with {@code write().save(path)}. */
  public static MLReader<Dl4jEstimator> read() {
    return new DefaultParamsReader<>();
  }

  /** Loads an estimator saved at {@code path}. */
  public static Dl4jEstimator load(String path) {
    return read().load(path);
  }

  private int intOf(IntParam p) {
    return (Integer) getOrDefault(p);
  }
}
