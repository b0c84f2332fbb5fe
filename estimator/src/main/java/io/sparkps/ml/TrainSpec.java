package io.sparkps.ml;

import io.sparkps.ps.Consistency;
import java.io.Serializable;
import java.util.Objects;

/**
 * How to train, as tf-yarn's TrainSpec: the input and its columns, the minibatch size, how long
 * (epochs, or maxSteps per worker), consistency, the seed and checkpoints. Immutable; made with
 * {@link #builder()}.
 */
public final class TrainSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  private final InputFn input;
  private final String featuresCol;
  private final String labelCol;
  private final int batchSize;
  private final int epochs;
  private final long maxSteps;
  private final Consistency consistency;
  private final int staleness;
  private final long seed;
  private final String checkpointDir;
  private final int checkpointInterval;
  private final int checkpointsKept;
  /** 0 in specs serialized before it existed: read as 1. */
  private final int gradientAccumulation;

  private TrainSpec(Builder b) {
    input = b.input;
    featuresCol = b.featuresCol;
    labelCol = b.labelCol;
    batchSize = b.batchSize;
    epochs = b.epochs;
    maxSteps = b.maxSteps;
    consistency = b.consistency;
    staleness = b.staleness;
    seed = b.seed;
    checkpointDir = b.checkpointDir;
    checkpointInterval = b.checkpointInterval;
    checkpointsKept = b.checkpointsKept;
    gradientAccumulation = b.gradientAccumulation;
  }

  /** A builder with the defaults: columns features/label, batch 64, 1 epoch, SYNC, seed 0, no checkpoints. */
  public static Builder builder() {
    return new Builder();
  }

  /** The training data, or null when the estimator is given a DataFrame directly. */
  public InputFn input() {
    return input;
  }

  /** The features column. */
  public String featuresCol() {
    return featuresCol;
  }

  /** The label column. */
  public String labelCol() {
    return labelCol;
  }

  /** Examples per minibatch and worker. */
  public int batchSize() {
    return batchSize;
  }

  /** Passes over the data (when maxSteps is 0). */
  public int epochs() {
    return epochs;
  }

  /** Steps per worker in all, or 0 to run epochs. */
  public long maxSteps() {
    return maxSteps;
  }

  /** ASYNC, SYNC or SSP. */
  public Consistency consistency() {
    return consistency;
  }

  /** SSP's staleness bound. */
  public int staleness() {
    return staleness;
  }

  /** The seed of the minibatch shuffles. */
  public long seed() {
    return seed;
  }

  /** The checkpoint directory (a Hadoop path), or null. */
  public String checkpointDir() {
    return checkpointDir;
  }

  /** Steps between checkpoints. */
  public int checkpointInterval() {
    return checkpointInterval;
  }

  /** Minibatches whose mean gradient a worker pushes as one step (1: every minibatch). */
  public int gradientAccumulation() {
    return Math.max(1, gradientAccumulation);
  }

  /** How many of the newest checkpoints are kept. */
  public int checkpointsKept() {
    return checkpointsKept;
  }

  /** A builder holding this spec's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.input = input;
    b.featuresCol = featuresCol;
    b.labelCol = labelCol;
    b.batchSize = batchSize;
    b.epochs = epochs;
    b.maxSteps = maxSteps;
    b.consistency = consistency;
    b.staleness = staleness;
    b.seed = seed;
    b.checkpointDir = checkpointDir;
    b.checkpointInterval = checkpointInterval;
    b.checkpointsKept = checkpointsKept;
    b.gradientAccumulation = gradientAccumulation();
    return b;
  }

  @Override
  public String toString() {
    return "TrainSpec{featuresCol=" + featuresCol + ", labelCol=" + labelCol + ", batchSize=" + batchSize
        + (maxSteps > 0 ? ", maxSteps=" + maxSteps : ", epochs=" + epochs) + ", consistency=" + consistency
        + (consistency == Consistency.SSP ? ", staleness=" + staleness : "")
        + (gradientAccumulation() > 1 ? ", gradientAccumulation=" + gradientAccumulation() : "") + ", seed=" + seed
        + (checkpointDir == null ? "" : ", checkpointDir=" + checkpointDir + ", checkpointInterval=" + checkpointInterval)
        + (input == null ? "" : ", input=" + input.getClass().getName()) + "}";
  }

  /** Builds a {@link TrainSpec}; every setting has a default. */
  public static final class Builder {
    private InputFn input;
    private String featuresCol = "features";
    private String labelCol = "label";
    private int batchSize = 64;
    private int epochs = 1;
    private long maxSteps;
    private Consistency consistency = Consistency.SYNC;
    private int staleness = 2;
    private long seed;
    private String checkpointDir;
    private int checkpointInterval = 100;
    private int checkpointsKept = 3;
    private int gradientAccumulation = 1;

    private Builder() {}

    /** The training data. */
    public Builder optInput(InputFn fn) {
      input = Objects.requireNonNull(fn, "input");
      return this;
    }

    /** The features column (a vector or an array of numbers). */
    public Builder optFeaturesCol(String col) {
      featuresCol = Objects.requireNonNull(col, "featuresCol");
      return this;
    }

    /** The label column. */
    public Builder optLabelCol(String col) {
      labelCol = Objects.requireNonNull(col, "labelCol");
      return this;
    }

    /** Examples per minibatch and worker (>= 1). */
    public Builder optBatchSize(int n) {
      batchSize = atLeast(n, 1, "batchSize");
      return this;
    }

    /** Passes over the data (>= 1). */
    public Builder optEpochs(int n) {
      epochs = atLeast(n, 1, "epochs");
      return this;
    }

    /** Steps per worker in all (>= 1), instead of epochs. */
    public Builder optMaxSteps(long n) {
      maxSteps = atLeast(n, 1, "maxSteps");
      return this;
    }

    /** Consistency; {@code staleness} is SSP's bound (ignored otherwise). */
    public Builder optConsistency(Consistency c, int staleness) {
      consistency = Objects.requireNonNull(c, "consistency");
      this.staleness = atLeast(staleness, 0, "staleness");
      return this;
    }

    /** The seed of the minibatch shuffles. */
    public Builder optSeed(long s) {
      seed = s;
      return this;
    }

    /** Checkpoints below {@code dir} (a Hadoop path) every {@code interval} steps and at the end; resumes from there. */
    public Builder optCheckpoints(String dir, int interval) {
      checkpointDir = Objects.requireNonNull(dir, "checkpoint directory");
      checkpointInterval = atLeast(interval, 1, "checkpoint interval");
      return this;
    }

    /** How many of the newest checkpoints are kept (>= 1, default 3); older ones are deleted. */
    public Builder optCheckpointsKept(int n) {
      checkpointsKept = atLeast(n, 1, "checkpointsKept");
      return this;
    }

    /**
     * Gradient accumulation (>= 1, default 1): each worker pushes the mean gradient of {@code k}
     * minibatches, computed from one pull, as one step ({@link Dl4jEstimator#setGradientAccumulation}).
     */
    public Builder optGradientAccumulation(int k) {
      gradientAccumulation = atLeast(k, 1, "gradientAccumulation");
      return this;
    }

    /** The spec. */
    public TrainSpec build() {
      return new TrainSpec(this);
    }

    static int atLeast(long n, long min, String what) {
      if (n < min) {
        throw new IllegalArgumentException(what + " is " + n + "; it must be >= " + min);
      }
      return (int) Math.min(n, Integer.MAX_VALUE);
    }
  }
}
