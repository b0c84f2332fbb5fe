package io.sparkps.ps;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import java.util.Arrays;
import java.util.Locale;

/**
 * An embedding table: rows of {@code dim} floats keyed by 64-bit ids, sharded across the ps by
 * id and created as ids arrive, each ps holding at most {@code maxRowsPerShard} of them. Immutable;
 * build one with {@link #builder()}.
 */
public final class EmbeddingSpec {
  /**
   * The lazy optimizers a table can use: a row's state is created when the row is first touched
   * and changes only when a gradient for it arrives, so a step costs what it touches, not the
   * table's size. On the wire, each is its name.
   */
  public enum Optimizer {
    /** {@code w -= lr * g}; no state. */
    SGD,
    /**
     * Per element: {@code s += g^2; w -= lr * g / (sqrt(s) + eps)}, each accumulator starting at
     * {@code eps} (as ND4J's AdaGrad: a row's first small gradients then take small steps, not
     * whole steps of {@code lr}).
     */
    ADAGRAD,
    /** One accumulator per row (FBGEMM's and TorchRec's row-wise AdaGrad): {@code s += mean(g^2)}. */
    ROWWISE_ADAGRAD,
    /** Adam on the touched rows only, bias-corrected by each row's update count. */
    LAZY_ADAM,
    /** FTRL-Proximal (McMahan et al., 2013), with L1 and L2: sparse rows for wide models. */
    FTRL;

    /**
     * The optimizer named {@code name}, in any case; a name that is none is refused, naming the
     * optimizers (callers put the table or column it was for before the message).
     */
    public static Optimizer of(String name) {
      String upper = name == null ? "" : name.trim().toUpperCase(Locale.ROOT);
      for (Optimizer o : values()) {
        if (o.name().equals(upper)) {
          return o;
        }
      }
      throw new IllegalArgumentException("optimizer must be one of " + Arrays.toString(values()) + ", got '" + name
          + "'");
    }
  }

  /** The optimizer a table gets unless told otherwise. */
  public static final Optimizer DEFAULT_OPTIMIZER = Optimizer.ROWWISE_ADAGRAD;
  private final EmbeddingSpecProto proto;

  private EmbeddingSpec(EmbeddingSpecProto proto) {
    this.proto = proto;
  }

  /** A builder; {@code setName} and {@code setDim} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** The table's name. */
  public String name() {
    return proto.getName();
  }

  /** Floats per row. */
  public int dim() {
    return proto.getDim();
  }

  /** The consistency group the table follows, or "" (ASYNC). */
  public String group() {
    return proto.getGroup();
  }

  /** The table's optimizer. */
  public Optimizer optimizer() {
    return Optimizer.valueOf(proto.getOptimizer());
  }

  /** The most rows one ps holds of this table. */
  public int maxRowsPerShard() {
    return proto.getMaxRowsPerShard();
  }

  EmbeddingSpecProto proto() {
    return proto;
  }

  @Override
  public String toString() {
    return "EmbeddingSpec{" + proto.toString().replace('\n', ' ').trim() + "}";
  }

  /** Builds an {@link EmbeddingSpec}. */
  public static final class Builder {
    private final EmbeddingSpecProto.Builder b = EmbeddingSpecProto.newBuilder()
        .setOptimizer(DEFAULT_OPTIMIZER.name())
        .setLearningRate(0.05).setBeta1(0.9).setBeta2(0.999).setEpsilon(1e-8).setFtrlBeta(1.0)
        .setMaxRowsPerShard(1_000_000).setMinCount(1).setSeed(1).setInitScale(0.01);

    /** Whether {@link #optAdam} set the epsilon (else ADAGRAD takes ND4J's default, 1e-6). */
    private boolean epsilonSet;

    private Builder() {}

    /** The table's name (required). */
    public Builder setName(String name) {
      b.setName(name == null ? "" : name);
      return this;
    }

    /** Floats per row (required, >= 1). */
    public Builder setDim(int dim) {
      b.setDim(dim);
      return this;
    }

    /** The table's optimizer with its learning rate (default {@link #DEFAULT_OPTIMIZER}, 0.05). */
    public Builder optOptimizer(Optimizer optimizer, double learningRate) {
      b.setOptimizer(optimizer.name()).setLearningRate(learningRate);
      return this;
    }

    /** As above, by name in any case ({@link Optimizer#of}); {@link #build()} refuses a name that is none. */
    public Builder optOptimizer(String optimizer, double learningRate) {
      b.setOptimizer(optimizer == null ? "" : optimizer.trim().toUpperCase(Locale.ROOT)).setLearningRate(learningRate);
      return this;
    }

    /**
     * LAZY_ADAM's betas and the epsilon of ADAGRAD, ROWWISE_ADAGRAD and LAZY_ADAM (defaults 0.9,
     * 0.999, and 1e-8, but 1e-6 for ADAGRAD: ND4J's, whose AdaGrad also starts each accumulator at
     * epsilon).
     */
    public Builder optAdam(double beta1, double beta2, double epsilon) {
      b.setBeta1(beta1).setBeta2(beta2).setEpsilon(epsilon);
      epsilonSet = true;
      return this;
    }

    /** FTRL's beta, L1 and L2 (defaults 1, 0, 0). */
    public Builder optFtrl(double beta, double l1, double l2) {
      b.setFtrlBeta(beta).setL1(l1).setL2(l2);
      return this;
    }

    /** The most rows one ps holds (default 1,000,000): past it, eviction or {@link EmbeddingTableFullException}. */
    public Builder optMaxRowsPerShard(int rows) {
      b.setMaxRowsPerShard(rows);
      return this;
    }

    /** Evict rows untouched for this many steps when a shard is full (default 0: never). */
    public Builder optEvictAfterSteps(long steps) {
      b.setEvictAfterSteps(steps);
      return this;
    }

    /** An id gets a row of its own once seen this many times (default 1); before, it shares the default row. */
    public Builder optMinCount(int count) {
      b.setMinCount(count);
      return this;
    }

    /** New rows are uniform in +-scale (default 0.01), a function of their id and {@code seed} (default 1). */
    public Builder optInit(double scale, long seed) {
      b.setInitScale(scale).setSeed(seed);
      return this;
    }

    /**
     * The consistency group (made with {@link PsClient#createGroup}) whose mode the table follows:
     * SYNC (each step's row gradients averaged over the workers and applied once; a pull of step t
     * waits for step t - 1) or SSP (bounded staleness). Without one, or with an ASYNC group, pushes
     * apply at once. Every worker of a SYNC or SSP table pushes every step, with its worker index.
     */
    public Builder optGroup(String group) {
      b.setGroup(group == null ? "" : group);
      return this;
    }

    /** Validates and builds the spec. */
    public EmbeddingSpec build() {
      if (!epsilonSet && b.getOptimizer().equals(Optimizer.ADAGRAD.name())) {
        b.setEpsilon(1e-6);
      }
      if (b.getName().isBlank()) {
        throw new IllegalArgumentException("embedding table name must not be blank, got '" + b.getName() + "'");
      }
      String at = "embedding table '" + b.getName() + "': ";
      if (b.getDim() < 1) {
        throw new IllegalArgumentException(at + "dim must be >= 1, got " + b.getDim());
      }
      try {
        Optimizer.of(b.getOptimizer());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(at + e.getMessage(), e);
      }
      if (!(b.getLearningRate() > 0)) {
        throw new IllegalArgumentException(at + "learningRate must be > 0, got " + b.getLearningRate());
      }
      if (b.getMaxRowsPerShard() < 1 || b.getEvictAfterSteps() < 0 || b.getMinCount() < 1 || !(b.getInitScale() >= 0)) {
        throw new IllegalArgumentException(at + "maxRowsPerShard and minCount must be >= 1, evictAfterSteps and "
            + "initScale >= 0, got " + b.getMaxRowsPerShard() + ", " + b.getMinCount() + ", "
            + b.getEvictAfterSteps() + ", " + b.getInitScale());
      }
      return new EmbeddingSpec(b.build());
    }
  }
}
