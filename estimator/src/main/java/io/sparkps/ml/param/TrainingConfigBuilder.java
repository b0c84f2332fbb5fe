package io.sparkps.ml.param;

import io.sparkps.ps.spec.Consistency;
import java.util.List;
import java.util.Objects;

/** Builds a {@link TrainingConfig}; every option has the estimator's default. */
public final class TrainingConfigBuilder {
  String featuresCol = "features";
  String labelCol = "label";
  int numWorkers = 2;
  int numPs = 1;
  int batchSize = 64;
  int epochs = 1;
  long maxSteps;
  Consistency consistency = Consistency.SYNC;
  int staleness = 2;
  boolean stalenessAwareRate;
  boolean asyncTables;
  long seed;
  String checkpointDir;
  int checkpointInterval = 0;
  int checkpointsKept = 3;
  int gradientAccumulation = 1;
  boolean bf16Transfers;
  double sparseDensity;
  double evalEverySeconds = 1.0;
  boolean evalDeferred;
  List<EmbeddingColumn> embeddingColumns = List.of();
  List<String> numericCols = List.of();
  NumericTransform numericTransform = NumericTransform.NONE;
  boolean factorizationTerm;
  boolean widePart;

  TrainingConfigBuilder() {}

  /** The features column (a vector or an array of numbers). */
  public TrainingConfigBuilder optFeaturesCol(String col) {
    featuresCol = Objects.requireNonNull(col, "featuresCol");
    return this;
  }

  /** The label column. */
  public TrainingConfigBuilder optLabelCol(String col) {
    labelCol = Objects.requireNonNull(col, "labelCol");
    return this;
  }

  /** Workers, the chief included (>= 1). */
  public TrainingConfigBuilder optNumWorkers(int n) {
    numWorkers = atLeast(n, 1, "numWorkers");
    return this;
  }

  /** Parameter servers (>= 1). */
  public TrainingConfigBuilder optNumPs(int n) {
    numPs = atLeast(n, 1, "numPs");
    return this;
  }

  /** Examples per minibatch and worker (>= 1). */
  public TrainingConfigBuilder optBatchSize(int n) {
    batchSize = atLeast(n, 1, "batchSize");
    return this;
  }

  /** Passes over the data (>= 1), when maxSteps is 0. */
  public TrainingConfigBuilder optEpochs(int n) {
    epochs = atLeast(n, 1, "epochs");
    return this;
  }

  /** Steps per worker in all, instead of epochs (>= 1; 0 runs epochs). */
  public TrainingConfigBuilder optMaxSteps(long n) {
    if (n < 0) {
      throw new IllegalArgumentException("maxSteps is " + n + "; it must be >= 1, or 0 to run epochs");
    }
    maxSteps = n;
    return this;
  }

  /** ASYNC, SYNC or SSP. */
  public TrainingConfigBuilder optConsistency(Consistency c) {
    consistency = Objects.requireNonNull(c, "consistency");
    return this;
  }

  /** SSP's staleness bound (>= 0; default 2). */
  public TrainingConfigBuilder optStaleness(int bound) {
    staleness = atLeast(bound, 0, "staleness");
    return this;
  }

  /** ASYNC and SSP: apply each gradient at the learning rate divided by 1 + its staleness. */
  public TrainingConfigBuilder optStalenessAwareRate(boolean enabled) {
    stalenessAwareRate = enabled;
    return this;
  }

  /** An embedding model's tables ASYNC beside a SYNC or SSP dense part (see {@link TrainingConfig#asyncTables()}). */
  public TrainingConfigBuilder optAsyncTables(boolean enabled) {
    asyncTables = enabled;
    return this;
  }

  /** The seed of the minibatch shuffles. */
  public TrainingConfigBuilder optSeed(long s) {
    seed = s;
    return this;
  }

  /** Where checkpoints are saved and resumed from (a Hadoop path); null for none. */
  public TrainingConfigBuilder optCheckpointDir(String dir) {
    checkpointDir = dir;
    return this;
  }

  /**
   * Steps between checkpoints (>= 1), or 0 (the default) for automatic: the chief saves once the
   * time since its last save is at least 100 times what that save took (and 30 s; the first 30 s after training starts), so saving takes
   * at most 1% of its time.
   */
  public TrainingConfigBuilder optCheckpointInterval(int steps) {
    checkpointInterval = atLeast(steps, 0, "checkpointInterval");
    return this;
  }

  /** How many of the newest checkpoints are kept (>= 1; default 3); older ones are deleted. */
  public TrainingConfigBuilder optCheckpointsKept(int n) {
    checkpointsKept = atLeast(n, 1, "checkpointsKept");
    return this;
  }

  /** Minibatches whose mean gradient a worker pushes as one step (>= 1; default 1, every minibatch). */
  public TrainingConfigBuilder optGradientAccumulation(int k) {
    if (k < 1) {
      throw new IllegalArgumentException("gradientAccumulation is " + k + ": it counts the minibatches pushed as one "
          + "step, so give 1 or more (1 pushes every minibatch)");
    }
    gradientAccumulation = k;
    return this;
  }

  /** Gradients and parameters as bfloat16 between executors. */
  public TrainingConfigBuilder optBf16Transfers(boolean enabled) {
    bf16Transfers = enabled;
    return this;
  }

  /** ASYNC and SSP: the fraction (0..1) of each large variable's elements pushes and pulls send; 0 is dense. */
  public TrainingConfigBuilder optSparseDensity(double density) {
    if (!(density >= 0 && density <= 1)) {
      throw new IllegalArgumentException("sparseDensity is " + density + "; it must be in [0, 1] (0: dense)");
    }
    sparseDensity = density;
    return this;
  }

  /** Seconds between evaluations at the least (> 0; default 1). */
  public TrainingConfigBuilder optEvalEverySeconds(double seconds) {
    if (!(seconds > 0) || Double.isInfinite(seconds)) {
      throw new IllegalArgumentException("evalEverySeconds is " + seconds + "; it must be a number of seconds > 0");
    }
    evalEverySeconds = seconds;
    return this;
  }

  /** The evaluator copies the variables while training runs and scores the copies after it. */
  public TrainingConfigBuilder optEvalDeferred(boolean deferred) {
    evalDeferred = deferred;
    return this;
  }

  /**
   * An embedding model: each of {@code columns} trained as a table on the ps, the network reading
   * their pooled embeddings and then {@code numericCols} (no columns: a dense network reading
   * featuresCol).
   */
  public TrainingConfigBuilder optEmbeddingColumns(List<EmbeddingColumn> columns, String... numericCols) {
    return optEmbeddingColumns(columns).optNumericCols(List.of(numericCols));
  }

  /** An embedding model's categorical columns, each trained as a table on the ps (empty: none). */
  public TrainingConfigBuilder optEmbeddingColumns(List<EmbeddingColumn> columns) {
    this.embeddingColumns = List.copyOf(Objects.requireNonNull(columns, "embeddingColumns"));
    return this;
  }

  /** With embedding columns: the numeric columns the network reads after the pooled embeddings. */
  public TrainingConfigBuilder optNumericCols(List<String> columns) {
    this.numericCols = List.copyOf(Objects.requireNonNull(columns, "numericCols"));
    return this;
  }

  /** With embedding columns: the network also reads the pooled embeddings' pairwise dot products (DeepFM's). */
  public TrainingConfigBuilder optFactorizationTerm(boolean enabled) {
    factorizationTerm = enabled;
    return this;
  }

  /** With embedding columns: how the network reads the numeric columns (default {@code NONE}, as they are). */
  public TrainingConfigBuilder optNumericTransform(NumericTransform transform) {
    numericTransform = Objects.requireNonNull(transform, "numericTransform");
    return this;
  }

  /** With embedding columns: a wide part too, a weight per id of each column (Wide &amp; Deep). */
  public TrainingConfigBuilder optWidePart(boolean enabled) {
    widePart = enabled;
    return this;
  }

  /** The configuration; refuses options that do not go together. */
  public TrainingConfig build() {
    if (sparseDensity > 0 && consistency == Consistency.SYNC) {
      throw new IllegalArgumentException("sparseDensity " + sparseDensity + " needs consistency ASYNC or SSP: SYNC "
          + "workers must compute from the same values, which sparse pulls do not give; set consistency to ASYNC or "
          + "SSP, or sparseDensity to 0");
    }
    if (gradientAccumulation > 1 && sparseDensity > 0) {
      throw new IllegalArgumentException("gradientAccumulation " + gradientAccumulation + " does not go with sparse "
          + "transfers, whose workers run DL4J's updater after every minibatch: set sparseDensity to 0, or "
          + "gradientAccumulation to 1");
    }
    if (embeddingColumns.isEmpty()) {
      if (!numericCols.isEmpty()) {
        throw new IllegalArgumentException("numericCols " + numericCols + " are set without embeddingColumns: "
            + "assemble them into featuresCol (a VectorAssembler), or set embeddingColumns");
      }
      String alone = widePart ? "widePart" : factorizationTerm ? "factorizationTerm" : asyncTables ? "asyncTables"
          : numericTransform != NumericTransform.NONE ? "numericTransform" : null;
      if (alone != null) {
        throw new IllegalArgumentException(alone + " is set without embeddingColumns: it belongs to an embedding "
            + "model; set embeddingColumns, or unset it");
      }
    } else {
      EmbeddingColumn.checkInputs(embeddingColumns, numericCols, factorizationTerm);
    }
    if (!embeddingColumns.isEmpty() && (gradientAccumulation > 1 || sparseDensity > 0)) {
      throw new IllegalArgumentException("embeddingColumns do not go with " + (gradientAccumulation > 1
          ? "gradientAccumulation " + gradientAccumulation : "sparseDensity " + sparseDensity) + " yet: set "
          + "gradientAccumulation 1 and sparseDensity 0");
    }
    TrainingConfig config = new TrainingConfig(this);
    config.clusterSpec().build(); // what the cluster refuses (bf16 with sparse transfers), refused here
    return config;
  }

  public static int atLeast(long n, long min, String what) {
    if (n < min) {
      throw new IllegalArgumentException(what + " is " + n + "; it must be >= " + min);
    }
    return (int) Math.min(n, Integer.MAX_VALUE);
  }
}
