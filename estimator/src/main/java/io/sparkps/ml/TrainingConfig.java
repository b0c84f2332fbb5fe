package io.sparkps.ml;

import io.sparkps.ps.Consistency;
import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.spark.ClusterSpec;
import java.io.Serializable;
import java.util.Objects;

/**
 * How to train a network, whatever the surface that asked: the estimator's Params
 * ({@link Dl4jEstimator#setConfig}, {@link Dl4jEstimatorParams#getConfig}), an {@link Experiment}'s
 * specs, the command line's flags. Immutable; made with {@link #builder()}, every option optional
 * with the estimator's default. A value out of range is refused by its builder method, options
 * that do not go together by {@link Builder#build()}, each naming the option and the fix.
 */
public final class TrainingConfig implements Serializable {
  private static final long serialVersionUID = 1L;
  private final String featuresCol;
  private final String labelCol;
  private final int numWorkers;
  private final int numPs;
  private final int batchSize;
  private final int epochs;
  private final long maxSteps;
  private final Consistency consistency;
  private final int staleness;
  private final boolean stalenessAwareRate;
  private final long seed;
  private final String checkpointDir;
  private final int checkpointInterval;
  private final int checkpointsKept;
  private final int gradientAccumulation;
  private final boolean bf16Transfers;
  private final double sparseDensity;
  private final double evalEverySeconds;
  private final boolean evalDeferred;

  private TrainingConfig(Builder b) {
    featuresCol = b.featuresCol;
    labelCol = b.labelCol;
    numWorkers = b.numWorkers;
    numPs = b.numPs;
    batchSize = b.batchSize;
    epochs = b.epochs;
    maxSteps = b.maxSteps;
    consistency = b.consistency;
    staleness = b.staleness;
    stalenessAwareRate = b.stalenessAwareRate;
    seed = b.seed;
    checkpointDir = b.checkpointDir;
    checkpointInterval = b.checkpointInterval;
    checkpointsKept = b.checkpointsKept;
    gradientAccumulation = b.gradientAccumulation;
    bf16Transfers = b.bf16Transfers;
    sparseDensity = b.sparseDensity;
    evalEverySeconds = b.evalEverySeconds;
    evalDeferred = b.evalDeferred;
  }

  /** A builder with the defaults: columns features/label, 2 workers, 1 ps, batch 64, 1 epoch, SYNC, no checkpoints. */
  public static Builder builder() {
    return new Builder();
  }

  /** The defaults. */
  public static TrainingConfig defaults() {
    return builder().build();
  }

  /** The features column (a vector or an array of numbers). */
  public String featuresCol() {
    return featuresCol;
  }

  /** The label column (class index or one-hot vector for classifiers, number or vector for regressors). */
  public String labelCol() {
    return labelCol;
  }

  /** Workers, the chief included. */
  public int numWorkers() {
    return numWorkers;
  }

  /** Parameter servers. */
  public int numPs() {
    return numPs;
  }

  /** Examples per minibatch and worker. */
  public int batchSize() {
    return batchSize;
  }

  /** Passes over the data (when {@link #maxSteps()} is 0). */
  public int epochs() {
    return epochs;
  }

  /** Steps per worker in all, or 0 to run {@link #epochs()}. */
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

  /** ASYNC and SSP: whether each gradient is applied at the learning rate divided by 1 + its staleness. */
  public boolean stalenessAwareRate() {
    return stalenessAwareRate;
  }

  /** The seed of the minibatch shuffles. */
  public long seed() {
    return seed;
  }

  /** Where checkpoints are saved and resumed from (a Hadoop path), or null for none. */
  public String checkpointDir() {
    return checkpointDir;
  }

  /** Steps between checkpoints (and one at the end). */
  public int checkpointInterval() {
    return checkpointInterval;
  }

  /** How many of the newest checkpoints are kept. */
  public int checkpointsKept() {
    return checkpointsKept;
  }

  /** Minibatches whose mean gradient a worker pushes as one step, all computed from one pull (1: every minibatch). */
  public int gradientAccumulation() {
    return gradientAccumulation;
  }

  /** Whether gradients and parameters travel as bfloat16 between executors (the ps keeps float32). */
  public boolean bf16Transfers() {
    return bf16Transfers;
  }

  /**
   * ASYNC and SSP: the fraction of each large variable's elements a worker's push and pull send
   * (0: dense). With sparse transfers the workers run DL4J's updaters and push their updates.
   */
  public double sparseDensity() {
    return sparseDensity;
  }

  /** Whether workers push updates (their DL4J updaters ran) rather than gradients: with sparse transfers. */
  public boolean workerUpdates() {
    return sparseDensity > 0;
  }

  /** Seconds between evaluations at the least. */
  public double evalEverySeconds() {
    return evalEverySeconds;
  }

  /** Whether the evaluator only copies the variables while training runs and scores the copies after it. */
  public boolean evalDeferred() {
    return evalDeferred;
  }

  /** The consistency group the network's variables train in, among {@code workers} workers. */
  ConsistencyGroup group(int workers) {
    return switch (consistency) {
      case SYNC -> ConsistencyGroup.sync("dl4j", workers);
      case SSP -> stalenessAwareRate ? ConsistencyGroup.ssp("dl4j", workers, staleness).withStalenessAwareRate()
          : ConsistencyGroup.ssp("dl4j", workers, staleness);
      case ASYNC -> stalenessAwareRate ? ConsistencyGroup.async("dl4j").withStalenessAwareRate()
          : ConsistencyGroup.async("dl4j");
    };
  }

  /** A cluster spec of this configuration's workers, ps and transfers, for the caller to add timeouts and an evaluator to. */
  public ClusterSpec.Builder clusterSpec() {
    return ClusterSpec.builder().setNumPs(numPs).setNumWorkers(numWorkers).optBf16Transfers(bf16Transfers)
        .optSparseTransfers(sparseDensity);
  }

  /** Refuses a cluster spec that disagrees with this configuration on what both hold. */
  void checkCluster(ClusterSpec spec) {
    if (spec.numPs() != numPs || spec.numWorkers() != numWorkers || spec.bf16Transfers() != bf16Transfers
        || spec.sparseDensity() != sparseDensity) {
      throw new IllegalArgumentException("the cluster spec (" + spec.numWorkers() + " workers, " + spec.numPs() + " ps, "
          + "bf16 " + spec.bf16Transfers() + ", sparse density " + spec.sparseDensity() + ") disagrees with the training "
          + "config (" + numWorkers + " workers, " + numPs + " ps, bf16 " + bf16Transfers + ", sparse density "
          + sparseDensity + "): make it with config.clusterSpec()");
    }
  }

  /** A builder holding this configuration's values. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.featuresCol = featuresCol;
    b.labelCol = labelCol;
    b.numWorkers = numWorkers;
    b.numPs = numPs;
    b.batchSize = batchSize;
    b.epochs = epochs;
    b.maxSteps = maxSteps;
    b.consistency = consistency;
    b.staleness = staleness;
    b.stalenessAwareRate = stalenessAwareRate;
    b.seed = seed;
    b.checkpointDir = checkpointDir;
    b.checkpointInterval = checkpointInterval;
    b.checkpointsKept = checkpointsKept;
    b.gradientAccumulation = gradientAccumulation;
    b.bf16Transfers = bf16Transfers;
    b.sparseDensity = sparseDensity;
    b.evalEverySeconds = evalEverySeconds;
    b.evalDeferred = evalDeferred;
    return b;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TrainingConfig c && toString().equals(c.toString());
  }

  @Override
  public int hashCode() {
    return toString().hashCode();
  }

  /** Every option, as {@code name=value}. */
  @Override
  public String toString() {
    return "TrainingConfig{featuresCol=" + featuresCol + ", labelCol=" + labelCol + ", numWorkers=" + numWorkers
        + ", numPs=" + numPs + ", batchSize=" + batchSize + ", epochs=" + epochs + ", maxSteps=" + maxSteps
        + ", consistency=" + consistency + ", staleness=" + staleness + ", stalenessAwareRate=" + stalenessAwareRate
        + ", seed=" + seed + ", checkpointDir=" + checkpointDir + ", checkpointInterval=" + checkpointInterval
        + ", checkpointsKept=" + checkpointsKept + ", gradientAccumulation=" + gradientAccumulation
        + ", bf16Transfers=" + bf16Transfers + ", sparseDensity=" + sparseDensity + ", evalEverySeconds="
        + evalEverySeconds + ", evalDeferred=" + evalDeferred + "}";
  }

  /** Builds a {@link TrainingConfig}; every option has the estimator's default. */
  public static final class Builder {
    private String featuresCol = "features";
    private String labelCol = "label";
    private int numWorkers = 2;
    private int numPs = 1;
    private int batchSize = 64;
    private int epochs = 1;
    private long maxSteps;
    private Consistency consistency = Consistency.SYNC;
    private int staleness = 2;
    private boolean stalenessAwareRate;
    private long seed;
    private String checkpointDir;
    private int checkpointInterval = 100;
    private int checkpointsKept = 3;
    private int gradientAccumulation = 1;
    private boolean bf16Transfers;
    private double sparseDensity;
    private double evalEverySeconds = 1.0;
    private boolean evalDeferred;

    private Builder() {}

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

    /** Workers, the chief included (>= 1). */
    public Builder optNumWorkers(int n) {
      numWorkers = atLeast(n, 1, "numWorkers");
      return this;
    }

    /** Parameter servers (>= 1). */
    public Builder optNumPs(int n) {
      numPs = atLeast(n, 1, "numPs");
      return this;
    }

    /** Examples per minibatch and worker (>= 1). */
    public Builder optBatchSize(int n) {
      batchSize = atLeast(n, 1, "batchSize");
      return this;
    }

    /** Passes over the data (>= 1), when maxSteps is 0. */
    public Builder optEpochs(int n) {
      epochs = atLeast(n, 1, "epochs");
      return this;
    }

    /** Steps per worker in all, instead of epochs (>= 1; 0 runs epochs). */
    public Builder optMaxSteps(long n) {
      if (n < 0) {
        throw new IllegalArgumentException("maxSteps is " + n + "; it must be >= 1, or 0 to run epochs");
      }
      maxSteps = n;
      return this;
    }

    /** ASYNC, SYNC or SSP. */
    public Builder optConsistency(Consistency c) {
      consistency = Objects.requireNonNull(c, "consistency");
      return this;
    }

    /** SSP's staleness bound (>= 0; default 2). */
    public Builder optStaleness(int bound) {
      staleness = atLeast(bound, 0, "staleness");
      return this;
    }

    /** ASYNC and SSP: apply each gradient at the learning rate divided by 1 + its staleness. */
    public Builder optStalenessAwareRate(boolean enabled) {
      stalenessAwareRate = enabled;
      return this;
    }

    /** The seed of the minibatch shuffles. */
    public Builder optSeed(long s) {
      seed = s;
      return this;
    }

    /** Where checkpoints are saved and resumed from (a Hadoop path); null for none. */
    public Builder optCheckpointDir(String dir) {
      checkpointDir = dir;
      return this;
    }

    /** Steps between checkpoints (>= 1; default 100). */
    public Builder optCheckpointInterval(int steps) {
      checkpointInterval = atLeast(steps, 1, "checkpointInterval");
      return this;
    }

    /** How many of the newest checkpoints are kept (>= 1; default 3); older ones are deleted. */
    public Builder optCheckpointsKept(int n) {
      checkpointsKept = atLeast(n, 1, "checkpointsKept");
      return this;
    }

    /** Minibatches whose mean gradient a worker pushes as one step (>= 1; default 1, every minibatch). */
    public Builder optGradientAccumulation(int k) {
      if (k < 1) {
        throw new IllegalArgumentException("gradientAccumulation is " + k + ": it counts the minibatches pushed as one "
            + "step, so give 1 or more (1 pushes every minibatch)");
      }
      gradientAccumulation = k;
      return this;
    }

    /** Gradients and parameters as bfloat16 between executors. */
    public Builder optBf16Transfers(boolean enabled) {
      bf16Transfers = enabled;
      return this;
    }

    /** ASYNC and SSP: the fraction (0..1) of each large variable's elements pushes and pulls send; 0 is dense. */
    public Builder optSparseDensity(double density) {
      if (!(density >= 0 && density <= 1)) {
        throw new IllegalArgumentException("sparseDensity is " + density + "; it must be in [0, 1] (0: dense)");
      }
      sparseDensity = density;
      return this;
    }

    /** Seconds between evaluations at the least (> 0; default 1). */
    public Builder optEvalEverySeconds(double seconds) {
      if (!(seconds > 0) || Double.isInfinite(seconds)) {
        throw new IllegalArgumentException("evalEverySeconds is " + seconds + "; it must be a number of seconds > 0");
      }
      evalEverySeconds = seconds;
      return this;
    }

    /** The evaluator copies the variables while training runs and scores the copies after it. */
    public Builder optEvalDeferred(boolean deferred) {
      evalDeferred = deferred;
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
      TrainingConfig config = new TrainingConfig(this);
      config.clusterSpec().build(); // what the cluster refuses (bf16 with sparse transfers), refused here
      return config;
    }

    static int atLeast(long n, long min, String what) {
      if (n < min) {
        throw new IllegalArgumentException(what + " is " + n + "; it must be >= " + min);
      }
      return (int) Math.min(n, Integer.MAX_VALUE);
    }
  }
}
