package io.sparkps.cli;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.max;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.param.TrainingConfigBuilder;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.Optimizer;
import java.util.concurrent.Callable;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code sparkps train}: trains a network on a data set into a run directory. */
@Command(name = "train", mixinStandardHelpOptions = true, description = "Train a network; results go to a run directory.")
final class TrainCommand implements Callable<Integer> {
  /** Where every training option's default comes from (the flags' defaults are these, never written here). */
  static final TrainingConfig DEFAULTS = TrainingConfig.defaults();
  /** Where the embedding columns' defaults come from (an embedding column as {@code EmbeddingColumn.of} makes it). */
  private static final EmbeddingColumn COLUMN_DEFAULTS = EmbeddingColumn.of("defaults", 8);

  @Mixin
  CommonOptions common = new CommonOptions();

  @Mixin
  DataOptions columns = new DataOptions();

  @Option(names = "--data", required = true, paramLabel = "PATH", description = "the training data")
  String data;

  @Option(names = "--eval-data", paramLabel = "PATH", description = "held-out data, scored during and after training")
  String evalData;

  @Option(names = "--network", paramLabel = "SPEC", defaultValue = "mlp", description = "mlp, mlp:H1,H2,..., lenet, "
      + "keras:PATH (a compiled tf.keras model saved as .h5), or a file with a DL4J configuration's JSON "
      + "(default: ${DEFAULT-VALUE})")
  String network;

  @Option(names = "--workers", description = "workers, the chief included (default: ${DEFAULT-VALUE})")
  int workers = DEFAULTS.numWorkers();

  @Option(names = "--ps", description = "parameter servers (default: ${DEFAULT-VALUE})")
  int ps = DEFAULTS.numPs();

  @Option(names = "--consistency", description = "${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
  Consistency consistency = DEFAULTS.consistency();

  @Option(names = "--staleness", description = "SSP's staleness bound (default: ${DEFAULT-VALUE})")
  int staleness = DEFAULTS.staleness();

  @Option(names = "--epochs", description = "passes over the data (default: ${DEFAULT-VALUE})")
  int epochs = DEFAULTS.epochs();

  @Option(names = "--steps", description = "steps per worker instead of epochs")
  long steps = DEFAULTS.maxSteps();

  @Option(names = "--batch-size", description = "examples per minibatch and worker (default: ${DEFAULT-VALUE})")
  int batchSize = DEFAULTS.batchSize();

  @Option(names = "--seed", description = "seed of the network and the shuffles (default: ${DEFAULT-VALUE})")
  long seed = DEFAULTS.seed();

  @Option(names = "--learning-rate", defaultValue = "0.001", description = "Adam's learning rate for the presets "
      + "(default: ${DEFAULT-VALUE})")
  double learningRate;

  @Option(names = "--output", paramLabel = "DIR", defaultValue = "sparkps-run", description = "the run directory "
      + "(default: ${DEFAULT-VALUE})")
  String output;

  @Option(names = "--overwrite", description = "replace the files of a run already in --output (others are kept)")
  boolean overwrite;

  @Option(names = "--checkpoint-dir", paramLabel = "PATH", description = "save checkpoints there and resume from them "
      + "(default: checkpoints/ in the run directory when every executor reaches it, else a directory the run "
      + "shares and deletes; none: no checkpoints)")
  String checkpointDir;

  @Option(names = "--checkpoint-interval", description = "steps between checkpoints (default: ${DEFAULT-VALUE}, "
      + "automatic: saving takes at most 1%% of the chief's time)")
  int checkpointInterval = DEFAULTS.checkpointInterval();

  @Option(names = "--gradient-accumulation", paramLabel = "K", description = "minibatches whose mean gradient a "
      + "worker pushes as one step (default: ${DEFAULT-VALUE}, every minibatch)")
  int gradientAccumulation = DEFAULTS.gradientAccumulation();

  @Option(names = "--checkpoints-kept", description = "how many of the newest checkpoints are kept (default: "
      + "${DEFAULT-VALUE})")
  int checkpointsKept = DEFAULTS.checkpointsKept();

  @Option(names = "--mlflow-tracking-uri", paramLabel = "URI", description = "log the run's params, every step's "
      + "metrics and its end to this MLflow tracking server, http(s)://host:port (default: MLFLOW_TRACKING_URI; "
      + "unset: no tracking); credentials from MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD")
  String mlflowTrackingUri = "";

  @Option(names = "--mlflow-experiment", paramLabel = "NAME", description = "the MLflow experiment, created when "
      + "missing (default: MLFLOW_EXPERIMENT_NAME, else Default)")
  String mlflowExperiment = "";

  @Option(names = "--mlflow-run-name", paramLabel = "NAME", description = "the MLflow run's name (default: MLflow's)")
  String mlflowRunName = "";

  @Option(names = "--mlflow-tag", paramLabel = "KEY=VALUE", description = "a tag of the MLflow run (repeatable)")
  java.util.Map<String, String> mlflowTags = new java.util.LinkedHashMap<>();

  @Option(names = "--tensorboard-dir", paramLabel = "PATH", description = "write TensorBoard event files there (any "
      + "Hadoop path), in a subdirectory named by the run's id")
  String tensorboardDir = "";

  @Option(names = "--tensorboard-histogram-steps", paramLabel = "N", description = "with --tensorboard-dir, the "
      + "chief's steps between histograms of the network's variables (0: none; default: ${DEFAULT-VALUE})")
  int tensorboardHistogramSteps = 100;

  @Option(names = "--staleness-aware-rate", description = "ASYNC and SSP: apply each gradient at the learning rate "
      + "divided by 1 + its staleness")
  boolean stalenessAwareRate;

  @Option(names = "--bf16", description = "gradients and parameters travel as bfloat16 between executors")
  boolean bf16;

  @Option(names = "--sparse-density", paramLabel = "D", description = "ASYNC and SSP: the fraction of each large "
      + "variable's elements pushes and pulls send (default: ${DEFAULT-VALUE}, dense)")
  double sparseDensity = DEFAULTS.sparseDensity();

  @Option(names = "--eval-every", description = "least seconds between evaluations (default: ${DEFAULT-VALUE})")
  double evalEverySeconds = DEFAULTS.evalEverySeconds();

  @Option(names = "--eval-deferred", description = "the evaluator copies the variables while training runs and "
      + "scores the copies after it (no cores taken from training)")
  boolean evalDeferred;

  @Option(names = "--categorical-cols", paramLabel = "COL", split = ",", description = "categorical columns (ids: "
      + "strings or whole numbers, or arrays of them), each trained as an embedding table on the ps; the network then "
      + "reads their pooled embeddings and --numeric-cols instead of --features")
  java.util.List<String> categoricalCols;

  @Option(names = "--numeric-cols", paramLabel = "COL", split = ",", description = "with --categorical-cols: the "
      + "numeric columns the network reads after the embeddings")
  java.util.List<String> numericCols = java.util.List.of();

  @Option(names = "--numeric-transform", paramLabel = "HOW", description = "with --categorical-cols: how the "
      + "network reads --numeric-cols: ${COMPLETION-CANDIDATES} (sign(x) ln(1 + |x|), for counts) "
      + "(default: ${DEFAULT-VALUE})")
  io.sparkps.ml.param.NumericTransform numericTransform = io.sparkps.ml.param.NumericTransform.NONE;

  @Option(names = "--embedding-dim", description = "floats per embedding row (default: ${DEFAULT-VALUE})")
  int embeddingDim = 8;

  @Option(names = "--embedding-optimizer", paramLabel = "NAME", completionCandidates = TableOptimizers.class,
      description = "the tables' optimizer: ${COMPLETION-CANDIDATES}, in any case (default: ${DEFAULT-VALUE})")
  String embeddingOptimizer = COLUMN_DEFAULTS.optimizer().name();

  @Option(names = "--embedding-learning-rate", description = "the tables' learning rate (default: ${DEFAULT-VALUE})")
  double embeddingLearningRate = COLUMN_DEFAULTS.learningRate();

  @Option(names = "--embedding-buckets", description = "hash each column's ids into this many rows (default: "
      + "${DEFAULT-VALUE}: a row per distinct id)")
  long embeddingBuckets = COLUMN_DEFAULTS.buckets();

  @Option(names = "--embedding-min-count", description = "an id gets a row of its own once seen this many times; "
      + "rarer ones share the default row (default: ${DEFAULT-VALUE})")
  int embeddingMinCount = COLUMN_DEFAULTS.minCount();

  @Option(names = "--factorization-term", description = "with --categorical-cols: the network also reads the sum of "
      + "the pooled embeddings' pairwise dot products (DeepFM's factorization machine)")
  boolean factorizationTerm;

  @Option(names = "--async-tables", description = "with --categorical-cols: the tables apply each worker's row "
      + "gradients at once (ASYNC), whatever --consistency the dense part follows")
  boolean asyncTables;

  @Option(names = "--wide", description = "with --categorical-cols: a wide part too, a weight per id of each column "
      + "(Wide & Deep); the mlp presets then build a graph that adds the weights, and the factorization term if on, "
      + "to the output beside the hidden layers")
  boolean wide;

  @Override
  public Integer call() throws Exception {
    SparkSession spark = Sessions.get(common.master, common.conf, workers + ps + 1);
    RunDirectory.Checked checked = RunDirectory.check(output, overwrite,
        spark.sparkContext().hadoopConfiguration(), spark.sparkContext().applicationId());
    Dataset<Row> train = columns.load(spark, data, "--data", workers);
    Dataset<Row> eval = evalData == null ? null : columns.load(spark, evalData, "--eval-data", workers);
    Dl4jEstimator estimator = estimator(train);
    java.util.Map<String, String> tags = new java.util.LinkedHashMap<>(mlflowTags);
    tags.putIfAbsent("sparkps.network", network);
    estimator.setMlflowTrackingUri(mlflowTrackingUri).setMlflowExperimentName(mlflowExperiment)
        .setMlflowRunName(mlflowRunName).setMlflowTags(tags).setTensorboardLogDir(tensorboardDir)
        .setTensorboardHistogramSteps(tensorboardHistogramSteps);
    RunDirectory dir = checked.create(); // once the arguments check out: a refused command leaves no directory
    if (checkpointDir == null) {
      String own = dir.checkpoints(spark.sparkContext());
      if (own != null) {
        estimator.setCheckpointDir(own);
      }
    }
    var summary = TrainingRun.execute(estimator, train, eval, dir, !common.noProgress && ConsoleProgress.terminal(),
        SparkPsCli.OUT);
    SparkPsCli.OUT.println(TrainingRun.describe(summary, dir));
    return SparkPsCli.OK;
  }

  Dl4jEstimator estimator(Dataset<Row> train) {
    TrainingConfig config = config();
    if (config.hasEmbeddings()) {
      return embeddingEstimator(train, config);
    }
    DataOptions.require(train, columns.featuresCol, columns.featureCols == null ? "--features" : "--feature-cols");
    DataOptions.require(train, columns.labelCol, "--label");
    String json = network.equals("mlp") || network.startsWith("mlp:") || network.equals("lenet")
        ? Networks.resolve(network, inputWidth(train), classes(train), seed, learningRate)
        : Networks.resolve(network, 0, 0, seed, learningRate);
    return new Dl4jEstimator().setNetworkJson(json).setConfig(config);
  }

  /** An embedding model's estimator: a table per categorical column, the network reading them and the numeric columns. */
  private Dl4jEstimator embeddingEstimator(Dataset<Row> train, TrainingConfig config) {
    DataOptions.require(train, columns.labelCol, "--label");
    config.embeddingColumns().forEach(c -> DataOptions.require(train, c.column(), "--categorical-cols"));
    config.numericCols().forEach(c -> DataOptions.require(train, c, "--numeric-cols"));
    io.sparkps.ml.embedding.EmbeddingInputs inputs = new io.sparkps.ml.embedding.EmbeddingInputs(
        config.embeddingColumns(), config.numericCols(), config.factorizationTerm(), config.widePart());
    boolean preset = network.equals("mlp") || network.startsWith("mlp:");
    String json = preset && config.widePart() ? io.sparkps.ml.embedding.WideAndDeep.network(inputs, Networks.hidden(network),
        classes(train), seed, learningRate).toJson()
        : preset ? Networks.resolve(network, inputs.width(), classes(train), seed, learningRate)
        : Networks.resolve(network, 0, 0, seed, learningRate);
    return new Dl4jEstimator().setNetworkJson(json).setConfig(config);
  }

  /** The embedding columns of --categorical-cols, each with the --embedding-* settings. */
  private java.util.List<EmbeddingColumn> embeddingColumns() {
    java.util.List<EmbeddingColumn> specs = new java.util.ArrayList<>();
    for (String c : categoricalCols == null ? java.util.List.<String>of() : categoricalCols) {
      try {
        specs.add(EmbeddingColumn.of(c, embeddingDim).withOptimizer(embeddingOptimizer, embeddingLearningRate)
            .withBuckets(embeddingBuckets).withMinCount(embeddingMinCount));
      } catch (IllegalArgumentException e) {
        throw new UsageException("--categorical-cols / --embedding-*: " + e.getMessage());
      }
    }
    if (!specs.isEmpty()) {
      try {
        EmbeddingColumn.checkInputs(specs, numericCols, factorizationTerm);
      } catch (IllegalArgumentException bad) {
        throw new UsageException("--categorical-cols / --numeric-cols: " + bad.getMessage());
      }
    }
    return specs;
  }

  /** The flags as a training configuration: the one place where they map onto it; a bad value names its flag. */
  TrainingConfig config() {
    TrainingConfigBuilder b = TrainingConfig.builder();
    flag("--features", columns.featuresCol, () -> b.optFeaturesCol(columns.featuresCol));
    flag("--label", columns.labelCol, () -> b.optLabelCol(columns.labelCol));
    flag("--workers", workers, () -> b.optNumWorkers(workers));
    flag("--ps", ps, () -> b.optNumPs(ps));
    flag("--consistency", consistency, () -> b.optConsistency(consistency));
    flag("--staleness", staleness, () -> b.optStaleness(staleness));
    flag("--staleness-aware-rate", stalenessAwareRate, () -> b.optStalenessAwareRate(stalenessAwareRate));
    flag("--async-tables", asyncTables, () -> b.optAsyncTables(asyncTables));
    flag("--epochs", epochs, () -> b.optEpochs(epochs));
    flag("--steps", steps, () -> b.optMaxSteps(steps));
    flag("--batch-size", batchSize, () -> b.optBatchSize(batchSize));
    flag("--seed", seed, () -> b.optSeed(seed));
    flag("--checkpoint-dir", checkpointDir, () -> b.optCheckpointDir(checkpointDir));
    flag("--checkpoint-interval", checkpointInterval, () -> b.optCheckpointInterval(checkpointInterval));
    flag("--checkpoints-kept", checkpointsKept, () -> b.optCheckpointsKept(checkpointsKept));
    flag("--gradient-accumulation", gradientAccumulation, () -> b.optGradientAccumulation(gradientAccumulation));
    flag("--bf16", bf16, () -> b.optBf16Transfers(bf16));
    flag("--sparse-density", sparseDensity, () -> b.optSparseDensity(sparseDensity));
    flag("--eval-every", evalEverySeconds, () -> b.optEvalEverySeconds(evalEverySeconds));
    flag("--eval-deferred", evalDeferred, () -> b.optEvalDeferred(evalDeferred));
    b.optEmbeddingColumns(embeddingColumns(), numericCols.toArray(new String[0])).optFactorizationTerm(factorizationTerm)
        .optWidePart(wide);
    flag("--numeric-transform", numericTransform, () -> b.optNumericTransform(numericTransform));
    try {
      return b.build();
    } catch (IllegalArgumentException e) {
      throw new UsageException(e.getMessage().replace("sparseDensity", "--sparse-density")
          .replace("gradientAccumulation", "--gradient-accumulation").replace("set consistency", "set --consistency")
          .replace("widePart", "--wide").replace("factorizationTerm", "--factorization-term")
          .replace("asyncTables", "--async-tables").replace("numericCols", "--numeric-cols")
          .replace("numericTransform", "--numeric-transform")
          .replace("embeddingColumns", "--categorical-cols"));
    }
  }

  private static void flag(String name, Object value, Runnable set) {
    try {
      set.run();
    } catch (IllegalArgumentException e) {
      throw new UsageException(name + " " + value + ": " + e.getMessage());
    }
  }

  private long inputWidth(Dataset<Row> train) {
    Row first = train.select(columns.featuresCol).head();
    Object v = first.get(0);
    if (v instanceof Vector vector) {
      return vector.size();
    }
    if (v instanceof scala.collection.Seq<?> seq) {
      return seq.size();
    }
    throw new UsageException("--features: column '" + columns.featuresCol + "' holds " + (v == null ? "null"
        : v.getClass().getSimpleName()) + ", not a vector: name numeric columns with --feature-cols");
  }

  private int classes(Dataset<Row> train) {
    Row top = train.agg(max(col(columns.labelCol))).head();
    if (top.isNullAt(0) || !(top.get(0) instanceof Number n)) {
      throw new UsageException("--label: column '" + columns.labelCol + "' must hold class indexes (0, 1, ...) for "
          + "the presets; index string labels first, or give --network a JSON configuration");
    }
    return Math.max(2, (int) n.doubleValue() + 1);
  }

  /** The embedding tables' optimizers, as {@code --embedding-optimizer}'s help lists them. */
  static final class TableOptimizers implements Iterable<String> {
    @Override
    public java.util.Iterator<String> iterator() {
      return Optimizer.ofTables().stream().map(Enum::name).iterator();
    }
  }
}
