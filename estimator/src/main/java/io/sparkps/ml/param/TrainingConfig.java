package io.sparkps.ml.param;

import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.spark.ClusterSpec;
import java.io.Serializable;
import java.util.List;

/**
 * How to train a network, whatever the surface that asked: the estimator's Params
 * ({@code Dl4jEstimator.setConfig}, {@code getConfig}), an {@code Experiment}'s
 * specs, the command line's flags. Immutable; made with {@link #builder()}, every option optional
 * with the estimator's default. A value out of range is refused by its builder method, options
 * that do not go together by {@link TrainingConfigBuilder#build()}, each naming the option and the fix.
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
  private final boolean asyncTables;
  private final long seed;
  private final String checkpointDir;
  private final int checkpointInterval;
  private final int checkpointsKept;
  private final int gradientAccumulation;
  private final boolean bf16Transfers;
  private final double sparseDensity;
  private final double evalEverySeconds;
  private final boolean evalDeferred;
  private final List<EmbeddingColumn> embeddingColumns;
  private final List<String> numericCols;
  private final NumericTransform numericTransform;
  private final boolean factorizationTerm;
  private final boolean widePart;

  TrainingConfig(TrainingConfigBuilder b) {
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
    asyncTables = b.asyncTables;
    seed = b.seed;
    checkpointDir = b.checkpointDir;
    checkpointInterval = b.checkpointInterval;
    checkpointsKept = b.checkpointsKept;
    gradientAccumulation = b.gradientAccumulation;
    bf16Transfers = b.bf16Transfers;
    sparseDensity = b.sparseDensity;
    evalEverySeconds = b.evalEverySeconds;
    evalDeferred = b.evalDeferred;
    embeddingColumns = List.copyOf(b.embeddingColumns);
    numericCols = List.copyOf(b.numericCols);
    numericTransform = b.numericTransform;
    factorizationTerm = b.factorizationTerm;
    widePart = b.widePart;
  }

  /** A builder with the defaults: columns features/label, 2 workers, 1 ps, batch 64, 1 epoch, SYNC, no checkpoints. */
  public static TrainingConfigBuilder builder() {
    return new TrainingConfigBuilder();
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

  /**
   * An embedding model's tables apply each worker's row gradients at once (ASYNC), whatever the
   * consistency of the dense part: SYNC or SSP dense variables beside ASYNC tables.
   */
  public boolean asyncTables() {
    return asyncTables;
  }

  /** The consistency group an embedding model's tables follow among {@code workers}: "" (none, ASYNC) with {@link #asyncTables()}. */
  public String tablesGroup(int workers) {
    return asyncTables ? "" : group(workers).name();
  }

  /** The seed of the minibatch shuffles. */
  public long seed() {
    return seed;
  }

  /** Where checkpoints are saved and resumed from (a Hadoop path), or null for none. */
  public String checkpointDir() {
    return checkpointDir;
  }

  /** Steps between checkpoints (and one at the end); 0: automatic, spaced by what saving takes. */
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
  public ConsistencyGroup group(int workers) {
    return switch (consistency) {
      case SYNC -> ConsistencyGroup.sync("dl4j", workers);
      case SSP -> stalenessAwareRate ? ConsistencyGroup.ssp("dl4j", workers, staleness).withStalenessAwareRate()
          : ConsistencyGroup.ssp("dl4j", workers, staleness);
      case ASYNC -> stalenessAwareRate ? ConsistencyGroup.async("dl4j").withStalenessAwareRate()
          : ConsistencyGroup.async("dl4j");
    };
  }

  /**
   * An embedding model's categorical columns, each trained as a table on the ps (empty: the
   * network reads {@link #featuresCol()}).
   */
  public List<EmbeddingColumn> embeddingColumns() {
    return embeddingColumns;
  }

  /** Whether the network reads embedding tables: {@link #embeddingColumns()} is not empty. */
  public boolean hasEmbeddings() {
    return !embeddingColumns.isEmpty();
  }

  /** With embedding columns: the numeric columns the network reads after the pooled embeddings. */
  public List<String> numericCols() {
    return numericCols;
  }

  /** With embedding columns: the network also reads the pooled embeddings' pairwise dot products (DeepFM). */
  public NumericTransform numericTransform() {
    return numericTransform;
  }

  /** Whether the network's last input is the factorization term. */
  public boolean factorizationTerm() {
    return factorizationTerm;
  }

  /** With embedding columns: a wide part too, a weight per id of each column (Wide &amp; Deep). */
  public boolean widePart() {
    return widePart;
  }

  /** A cluster spec of this configuration's workers, ps and transfers, for the caller to add timeouts and an evaluator to. */
  public ClusterSpec.Builder clusterSpec() {
    return ClusterSpec.builder().setNumPs(numPs).setNumWorkers(numWorkers).optBf16Transfers(bf16Transfers)
        .optSparseTransfers(sparseDensity);
  }

  /** Refuses a cluster spec that disagrees with this configuration on what both hold. */
  public void checkCluster(ClusterSpec spec) {
    if (spec.numPs() != numPs || spec.numWorkers() != numWorkers || spec.bf16Transfers() != bf16Transfers
        || spec.sparseDensity() != sparseDensity) {
      throw new IllegalArgumentException("the cluster spec (" + spec.numWorkers() + " workers, " + spec.numPs() + " ps, "
          + "bf16 " + spec.bf16Transfers() + ", sparse density " + spec.sparseDensity() + ") disagrees with the training "
          + "config (" + numWorkers + " workers, " + numPs + " ps, bf16 " + bf16Transfers + ", sparse density "
          + sparseDensity + "): make it with config.clusterSpec()");
    }
  }

  /** A builder holding this configuration's values. */
  public TrainingConfigBuilder toBuilder() {
    TrainingConfigBuilder b = new TrainingConfigBuilder();
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
    b.asyncTables = asyncTables;
    b.seed = seed;
    b.checkpointDir = checkpointDir;
    b.checkpointInterval = checkpointInterval;
    b.checkpointsKept = checkpointsKept;
    b.gradientAccumulation = gradientAccumulation;
    b.bf16Transfers = bf16Transfers;
    b.sparseDensity = sparseDensity;
    b.evalEverySeconds = evalEverySeconds;
    b.evalDeferred = evalDeferred;
    b.embeddingColumns = embeddingColumns;
    b.numericCols = numericCols;
    b.numericTransform = numericTransform;
    b.factorizationTerm = factorizationTerm;
    b.widePart = widePart;
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

  /**
   * Every option, as {@code name=value} in the config's order (from the declarations,
   * {@link TrainingOptions}); equal configs, and only they, have the same.
   */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder("TrainingConfig{");
    for (TrainingOption<?> o : TrainingOptions.ALL) {
      Object value = o.paramValue(this);
      out.append(o.name()).append('=').append(value instanceof String[] a ? List.of(a) : value).append(", ");
      if (o.name().equals("seed")) {
        out.append("checkpointDir=").append(checkpointDir).append(", ");
      }
    }
    return out.substring(0, out.length() - 2) + "}";
  }
}
