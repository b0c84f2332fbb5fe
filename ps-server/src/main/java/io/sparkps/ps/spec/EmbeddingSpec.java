package io.sparkps.ps.spec;

import java.util.Locale;

/**
 * An embedding table: rows of {@code dim} floats keyed by 64-bit ids, sharded across the ps by
 * id and created as ids arrive, each ps holding at most {@code maxRowsPerShard} of them. Immutable;
 * build one with {@link #builder()}.
 */
public final class EmbeddingSpec {
  /** The optimizer a table gets unless told otherwise. */
  public static final Optimizer DEFAULT_OPTIMIZER = Optimizer.ROWWISE_ADAGRAD;
  private final String name;
  private final int dim;
  private final String group;
  private final Optimizer optimizer;
  private final double learningRate;
  private final double beta1;
  private final double beta2;
  private final double epsilon;
  private final double ftrlBeta;
  private final double l1;
  private final double l2;
  private final int maxRowsPerShard;
  private final long evictAfterSteps;
  private final int minCount;
  private final double initScale;
  private final long seed;

  private EmbeddingSpec(Builder b) {
    name = b.name;
    dim = b.dim;
    group = b.group;
    optimizer = Optimizer.ofTable(b.optimizer);
    learningRate = b.learningRate;
    beta1 = b.beta1;
    beta2 = b.beta2;
    epsilon = b.epsilon;
    ftrlBeta = b.ftrlBeta;
    l1 = b.l1;
    l2 = b.l2;
    maxRowsPerShard = b.maxRowsPerShard;
    evictAfterSteps = b.evictAfterSteps;
    minCount = b.minCount;
    initScale = b.initScale;
    seed = b.seed;
  }

  /** A builder; {@code setName} and {@code setDim} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The table's name. */
  public String name() {
    return name;
  }

  /** Floats per row. */
  public int dim() {
    return dim;
  }

  /** The consistency group the table follows, or "" (ASYNC). */
  public String group() {
    return group;
  }

  /** The table's optimizer. */
  public Optimizer optimizer() {
    return optimizer;
  }

  /** The optimizer's learning rate. */
  public double learningRate() {
    return learningRate;
  }

  /** LAZY_ADAM's first beta. */
  public double beta1() {
    return beta1;
  }

  /** LAZY_ADAM's second beta. */
  public double beta2() {
    return beta2;
  }

  /** The epsilon of ADAGRAD, ROWWISE_ADAGRAD and LAZY_ADAM. */
  public double epsilon() {
    return epsilon;
  }

  /** FTRL's beta. */
  public double ftrlBeta() {
    return ftrlBeta;
  }

  /** FTRL's L1. */
  public double l1() {
    return l1;
  }

  /** FTRL's L2. */
  public double l2() {
    return l2;
  }

  /** The most rows one ps holds of this table. */
  public int maxRowsPerShard() {
    return maxRowsPerShard;
  }

  /** Rows untouched for this many steps may be evicted from a full shard (0: never). */
  public long evictAfterSteps() {
    return evictAfterSteps;
  }

  /** How many times an id is seen before it gets a row of its own. */
  public int minCount() {
    return minCount;
  }

  /** New rows are uniform in +-{@code initScale}. */
  public double initScale() {
    return initScale;
  }

  /** The seed new rows are drawn from, with their ids. */
  public long seed() {
    return seed;
  }

  @Override
  public String toString() {
    return "EmbeddingSpec{name=" + name + ", dim=" + dim + (group.isEmpty() ? "" : ", group=" + group)
        + ", optimizer=" + optimizer + ", learningRate=" + learningRate + ", beta1=" + beta1 + ", beta2=" + beta2
        + ", epsilon=" + epsilon + ", ftrlBeta=" + ftrlBeta + ", l1=" + l1 + ", l2=" + l2 + ", maxRowsPerShard="
        + maxRowsPerShard + ", evictAfterSteps=" + evictAfterSteps + ", minCount=" + minCount + ", initScale="
        + initScale + ", seed=" + seed + "}";
  }

  /** Builds an {@link EmbeddingSpec}. */
  public static final class Builder {
    private String name = "";
    private int dim;
    private String group = "";
    private String optimizer = DEFAULT_OPTIMIZER.name();
    private double learningRate = 0.05;
    private double beta1 = 0.9;
    private double beta2 = 0.999;
    private double epsilon = 1e-8;
    private double ftrlBeta = 1.0;
    private double l1;
    private double l2;
    private int maxRowsPerShard = 1_000_000;
    private long evictAfterSteps;
    private int minCount = 1;
    private double initScale = 0.01;
    private long seed = 1;

    /** Whether {@link #optAdam} set the epsilon (else ADAGRAD takes ND4J's default, 1e-6). */
    private boolean epsilonSet;

    private Builder() {}

    /** The table's name (required). */
    public Builder setName(String name) {
      this.name = name == null ? "" : name;
      return this;
    }

    /** Floats per row (required, >= 1). */
    public Builder setDim(int dim) {
      this.dim = dim;
      return this;
    }

    /** The table's optimizer with its learning rate (default {@link #DEFAULT_OPTIMIZER}, 0.05). */
    public Builder optOptimizer(Optimizer optimizer, double learningRate) {
      this.optimizer = optimizer.name();
      this.learningRate = learningRate;
      return this;
    }

    /**
     * As above, by name in any case ({@link Optimizer#ofTable}); {@link #build()} refuses a name that
     * is none, or an optimizer of dense variables only.
     */
    public Builder optOptimizer(String optimizer, double learningRate) {
      this.optimizer = optimizer == null ? "" : optimizer.trim().toUpperCase(Locale.ROOT);
      this.learningRate = learningRate;
      return this;
    }

    /**
     * LAZY_ADAM's betas and the epsilon of ADAGRAD, ROWWISE_ADAGRAD and LAZY_ADAM (defaults 0.9,
     * 0.999, and 1e-8, but 1e-6 for ADAGRAD: ND4J's, whose AdaGrad also starts each accumulator at
     * epsilon).
     */
    public Builder optAdam(double beta1, double beta2, double epsilon) {
      this.beta1 = beta1;
      this.beta2 = beta2;
      this.epsilon = epsilon;
      epsilonSet = true;
      return this;
    }

    /** FTRL's beta, L1 and L2 (defaults 1, 0, 0). */
    public Builder optFtrl(double beta, double l1, double l2) {
      this.ftrlBeta = beta;
      this.l1 = l1;
      this.l2 = l2;
      return this;
    }

    /** The most rows one ps holds (default 1,000,000): past it, eviction or {@link EmbeddingTableFullException}. */
    public Builder optMaxRowsPerShard(int rows) {
      this.maxRowsPerShard = rows;
      return this;
    }

    /** Evict rows untouched for this many steps when a shard is full (default 0: never). */
    public Builder optEvictAfterSteps(long steps) {
      this.evictAfterSteps = steps;
      return this;
    }

    /** An id gets a row of its own once seen this many times (default 1); before, it shares the default row. */
    public Builder optMinCount(int count) {
      this.minCount = count;
      return this;
    }

    /** New rows are uniform in +-scale (default 0.01), a function of their id and {@code seed} (default 1). */
    public Builder optInit(double scale, long seed) {
      this.initScale = scale;
      this.seed = seed;
      return this;
    }

    /**
     * The consistency group (made with {@code PsClient.createGroup}) whose mode the table follows:
     * SYNC (each step's row gradients averaged over the workers and applied once; a pull of step t
     * waits for step t - 1) or SSP (bounded staleness). Without one, or with an ASYNC group, pushes
     * apply at once. Every worker of a SYNC or SSP table pushes every step, with its worker index.
     */
    public Builder optGroup(String group) {
      this.group = group == null ? "" : group;
      return this;
    }

    /** Validates and builds the spec. */
    public EmbeddingSpec build() {
      if (!epsilonSet && optimizer.equals(Optimizer.ADAGRAD.name())) {
        epsilon = 1e-6;
      }
      if (name.isBlank()) {
        throw new IllegalArgumentException("embedding table name must not be blank, got '" + name + "'");
      }
      String at = "embedding table '" + name + "': ";
      if (dim < 1) {
        throw new IllegalArgumentException(at + "dim must be >= 1, got " + dim);
      }
      try {
        Optimizer.ofTable(optimizer);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(at + e.getMessage(), e);
      }
      if (!(learningRate > 0)) {
        throw new IllegalArgumentException(at + "learningRate must be > 0, got " + learningRate);
      }
      if (maxRowsPerShard < 1 || evictAfterSteps < 0 || minCount < 1 || !(initScale >= 0)) {
        throw new IllegalArgumentException(at + "maxRowsPerShard and minCount must be >= 1, evictAfterSteps and "
            + "initScale >= 0, got " + maxRowsPerShard + ", " + minCount + ", "
            + evictAfterSteps + ", " + initScale);
      }
      return new EmbeddingSpec(this);
    }
  }
}
