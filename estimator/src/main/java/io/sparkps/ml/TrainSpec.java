package io.sparkps.ml;

import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.param.TrainingConfigBuilder;
import io.sparkps.ps.spec.Consistency;
import java.io.Serializable;
import java.util.Objects;

/**
 * How to train, as tf-yarn's TrainSpec: the input and the {@link TrainingConfig} (its columns,
 * minibatch size, how long, consistency, transfers, the seed and checkpoints). The experiment's
 * cluster ({@link Experiment.Builder#optCluster}) and evaluation ({@link EvalSpec}) override the
 * config's workers, ps and evaluation options. Immutable; made with {@link #builder()}.
 */
public final class TrainSpec implements Serializable {
  private static final long serialVersionUID = 2L;
  private final InputFn input;
  private final TrainingConfig config;

  private TrainSpec(Builder b) {
    input = b.input;
    config = b.config.build();
  }

  /** The categorical columns trained as embedding tables (empty: the network reads the features column). */
  public java.util.List<io.sparkps.ml.param.EmbeddingColumn> embeddingColumns() {
    return config.embeddingColumns();
  }

  /** With embedding columns: the numeric columns read after the pooled embeddings. */
  public java.util.List<String> numericCols() {
    return config.numericCols();
  }

  /** With embedding columns: whether the network also reads the factorization term. */
  public boolean factorizationTerm() {
    return config.factorizationTerm();
  }

  /** With embedding columns: whether each column's wide weight is an input too. */
  public boolean widePart() {
    return config.widePart();
  }

  /** A builder with the defaults: columns features/label, batch 64, 1 epoch, SYNC, seed 0, no checkpoints. */
  public static Builder builder() {
    return new Builder();
  }

  /** The training data, or null when the estimator is given a DataFrame directly. */
  public InputFn input() {
    return input;
  }

  /** Every training option. */
  public TrainingConfig config() {
    return config;
  }

  /** The features column. */
  public String featuresCol() {
    return config.featuresCol();
  }

  /** The label column. */
  public String labelCol() {
    return config.labelCol();
  }

  /** Examples per minibatch and worker. */
  public int batchSize() {
    return config.batchSize();
  }

  /** Passes over the data (when maxSteps is 0). */
  public int epochs() {
    return config.epochs();
  }

  /** Steps per worker in all, or 0 to run epochs. */
  public long maxSteps() {
    return config.maxSteps();
  }

  /** ASYNC, SYNC or SSP. */
  public Consistency consistency() {
    return config.consistency();
  }

  /** SSP's staleness bound. */
  public int staleness() {
    return config.staleness();
  }

  /** The seed of the minibatch shuffles. */
  public long seed() {
    return config.seed();
  }

  /** The checkpoint directory (a Hadoop path), or null. */
  public String checkpointDir() {
    return config.checkpointDir();
  }

  /** Steps between checkpoints. */
  public int checkpointInterval() {
    return config.checkpointInterval();
  }

  /** Minibatches whose mean gradient a worker pushes as one step (1: every minibatch). */
  public int gradientAccumulation() {
    return config.gradientAccumulation();
  }

  /** How many of the newest checkpoints are kept. */
  public int checkpointsKept() {
    return config.checkpointsKept();
  }

  /** A builder holding this spec's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.input = input;
    b.config = config.toBuilder();
    return b;
  }

  @Override
  public String toString() {
    TrainingConfig c = config;
    return "TrainSpec{featuresCol=" + c.featuresCol() + ", labelCol=" + c.labelCol() + ", batchSize=" + c.batchSize()
        + (c.maxSteps() > 0 ? ", maxSteps=" + c.maxSteps() : ", epochs=" + c.epochs()) + ", consistency="
        + c.consistency() + (c.consistency() == Consistency.SSP ? ", staleness=" + c.staleness() : "")
        + (c.stalenessAwareRate() ? ", stalenessAwareRate=true" : "")
        + (c.asyncTables() ? ", asyncTables=true" : "")
        + (c.gradientAccumulation() > 1 ? ", gradientAccumulation=" + c.gradientAccumulation() : "")
        + (c.bf16Transfers() ? ", bf16Transfers=true" : "")
        + (c.sparseDensity() > 0 ? ", sparseDensity=" + c.sparseDensity() : "") + ", seed=" + c.seed()
        + (c.checkpointDir() == null ? "" : ", checkpointDir=" + c.checkpointDir() + ", checkpointInterval="
            + c.checkpointInterval())
        + (c.hasEmbeddings() ? ", embeddingColumns=" + c.embeddingColumns().stream()
            .map(io.sparkps.ml.param.EmbeddingColumn::column).toList() + ", numericCols=" + c.numericCols() : "")
        + (input == null ? "" : ", input=" + input.getClass().getName()) + "}";
  }

  /** Builds a {@link TrainSpec}; every setting has a default. */
  public static final class Builder {
    private InputFn input;
    private TrainingConfigBuilder config = TrainingConfig.builder();

    private Builder() {}

    /** With embedding columns: each column's wide weight as an input ({@link Dl4jEstimator#setWidePart}). */
    public Builder optWidePart(boolean on) {
      config.optWidePart(on);
      return this;
    }

    /** With embedding columns: how the network reads the numeric columns (see {@link Dl4jEstimator#setNumericTransform}). */
    public Builder optNumericTransform(io.sparkps.ml.param.NumericTransform transform) {
      config.optNumericTransform(transform);
      return this;
    }

    /** With embedding columns: the factorization term as the network's last input ({@link Dl4jEstimator#setFactorizationTerm}). */
    public Builder optFactorizationTerm(boolean on) {
      config.optFactorizationTerm(on);
      return this;
    }

    /**
     * Trains an embedding model ({@link Dl4jEstimator#setEmbeddingColumns}): each of
     * {@code columns} an embedding table on the ps, the network reading their pooled rows, then
     * {@code numericCols}.
     */
    public Builder optEmbeddingColumns(java.util.List<io.sparkps.ml.param.EmbeddingColumn> columns,
        String... numericCols) {
      config.optEmbeddingColumns(columns, numericCols);
      return this;
    }

    /** The training data. */
    public Builder optInput(InputFn fn) {
      input = Objects.requireNonNull(fn, "input");
      return this;
    }

    /** Every training option at once, replacing those set before. */
    public Builder optConfig(TrainingConfig c) {
      config = Objects.requireNonNull(c, "config").toBuilder();
      return this;
    }

    /** The features column (a vector or an array of numbers). */
    public Builder optFeaturesCol(String col) {
      config.optFeaturesCol(col);
      return this;
    }

    /** The label column. */
    public Builder optLabelCol(String col) {
      config.optLabelCol(col);
      return this;
    }

    /** Examples per minibatch and worker (>= 1). */
    public Builder optBatchSize(int n) {
      config.optBatchSize(n);
      return this;
    }

    /** Passes over the data (>= 1). */
    public Builder optEpochs(int n) {
      config.optEpochs(n);
      return this;
    }

    /** Steps per worker in all (>= 1), instead of epochs. */
    public Builder optMaxSteps(long n) {
      config.optMaxSteps(atLeast(n, 1, "maxSteps"));
      return this;
    }

    /** Consistency; {@code staleness} is SSP's bound (ignored otherwise). */
    public Builder optConsistency(Consistency c, int staleness) {
      config.optConsistency(c).optStaleness(staleness);
      return this;
    }

    /** ASYNC and SSP: each gradient applied at the learning rate divided by 1 + its staleness. */
    public Builder optStalenessAwareRate(boolean enabled) {
      config.optStalenessAwareRate(enabled);
      return this;
    }

    /** With embedding columns: ASYNC tables beside the run's consistency ({@link Dl4jEstimator#setAsyncTables}). */
    public Builder optAsyncTables(boolean enabled) {
      config.optAsyncTables(enabled);
      return this;
    }

    /** The seed of the minibatch shuffles. */
    public Builder optSeed(long s) {
      config.optSeed(s);
      return this;
    }

    /**
     * Checkpoints below {@code dir} (a Hadoop path; {@code none}: no checkpoints) every {@code interval} steps (0:
     * automatic, see {@link Dl4jEstimator#setCheckpointInterval}) and at the end; resumes from there.
     */
    public Builder optCheckpoints(String dir, int interval) {
      config.optCheckpointDir(Objects.requireNonNull(dir, "checkpoint directory"))
          .optCheckpointInterval(atLeast(interval, 0, "checkpoint interval"));
      return this;
    }

    /** How many of the newest checkpoints are kept (>= 1, default 3); older ones are deleted. */
    public Builder optCheckpointsKept(int n) {
      config.optCheckpointsKept(n);
      return this;
    }

    /**
     * Gradient accumulation (>= 1, default 1): each worker pushes the mean gradient of {@code k}
     * minibatches, computed from one pull, as one step ({@link Dl4jEstimator#setGradientAccumulation}).
     */
    public Builder optGradientAccumulation(int k) {
      config.optGradientAccumulation(atLeast(k, 1, "gradientAccumulation"));
      return this;
    }

    /** Gradients and parameters as bfloat16 between executors ({@link Dl4jEstimator#setBf16Transfers}). */
    public Builder optBf16Transfers(boolean enabled) {
      config.optBf16Transfers(enabled);
      return this;
    }

    /** ASYNC and SSP: sparse transfers of this density ({@link Dl4jEstimator#setSparseTransfers}). */
    public Builder optSparseTransfers(double density) {
      config.optSparseDensity(density);
      return this;
    }

    /** The spec; refuses options that do not go together. */
    public TrainSpec build() {
      return new TrainSpec(this);
    }

    static int atLeast(long n, long min, String what) {
      return TrainingConfigBuilder.atLeast(n, min, what);
    }
  }
}
