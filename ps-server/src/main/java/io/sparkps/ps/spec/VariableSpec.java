package io.sparkps.ps.spec;

import java.util.Arrays;
import java.util.Objects;

/**
 * The declaration of one shared variable: name, shape (float32), initializer, optimizer,
 * consistency group and, optionally, the ps shard it must live on.
 *
 * <p>Every task of a run declares the same specs (between-graph replication); creating a variable
 * that exists with the same spec is a no-op, with a different spec an error.
 */
public final class VariableSpec implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  /** No explicit shard: the placement planner decides. */
  public static final int UNPINNED = -1;

  private final String name;
  private final long[] shape;
  private final Initializer initializer;
  private final OptimizerConfig optimizer;
  private final String group;
  private final int pinnedShard;
  private final boolean allowNonFinite;

  private VariableSpec(Builder b) {
    this.name = b.name;
    this.shape = b.shape.clone();
    this.initializer = b.initializer;
    this.optimizer = b.optimizer;
    this.group = b.group;
    this.pinnedShard = b.pinnedShard;
    this.allowNonFinite = b.allowNonFinite;
  }

  /** A builder; {@link Builder#setName} and {@link Builder#setShape} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** A spec with zeros, plain SGD at rate 0.01 and the default (ASYNC) group. */
  public static VariableSpec of(String name, long... shape) {
    return builder().setName(name).setShape(shape).build();
  }

  /** The variable's name, unique within a run. */
  public String name() {
    return name;
  }

  /** The shape; a scalar has shape {@code []}. */
  public long[] shape() {
    return shape.clone();
  }

  /** Number of elements. */
  public long length() {
    long n = 1;
    for (long d : shape) {
      n *= d;
    }
    return n;
  }

  /** Rows: the first dimension, or 1 for a scalar. Variables are split across shards by rows. */
  public long rows() {
    return shape.length == 0 ? 1 : shape[0];
  }

  /** Elements per row. */
  public long rowLength() {
    return shape.length == 0 ? 1 : length() / Math.max(1, shape[0]);
  }

  /** The initializer. */
  public Initializer initializer() {
    return initializer;
  }

  /** The optimizer applied to pushed gradients. */
  public OptimizerConfig optimizer() {
    return optimizer;
  }

  /** The consistency group's name. */
  public String group() {
    return group;
  }

  /** The shard this variable is pinned to, or {@link #UNPINNED}. */
  public int pinnedShard() {
    return pinnedShard;
  }

  /** Whether NaN and infinite gradients and values are accepted (they are rejected by default). */
  public boolean allowNonFinite() {
    return allowNonFinite;
  }

  /**
   * Whether {@code other} declares the same variable: equal but for the values of a VALUES
   * initializer (only the first creator's values are used, as with TensorFlow's initializers).
   * A second creator of a variable must declare it the same way.
   */
  public boolean sameDeclaration(VariableSpec other) {
    Initializer i = other.initializer;
    boolean sameInit = i.kind() == Initializer.Kind.VALUES && initializer.kind() == Initializer.Kind.VALUES
        || i.equals(initializer);
    return other.name.equals(name) && Arrays.equals(other.shape, shape) && sameInit
        && other.optimizer.equals(optimizer) && other.group.equals(group) && other.pinnedShard == pinnedShard
        && other.allowNonFinite == allowNonFinite;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof VariableSpec s && s.name.equals(name) && Arrays.equals(s.shape, shape)
        && s.initializer.equals(initializer) && s.optimizer.equals(optimizer)
        && s.group.equals(group) && s.pinnedShard == pinnedShard
        && s.allowNonFinite == allowNonFinite;
  }

  @Override
  public int hashCode() {
    return Objects.hash(name, Arrays.hashCode(shape), initializer, optimizer, group, pinnedShard);
  }

  @Override
  public String toString() {
    return name + Arrays.toString(shape) + " init=" + initializer + " optimizer=" + optimizer
        + " group=" + group + (pinnedShard == UNPINNED ? "" : " pinned to ps " + pinnedShard);
  }

  /** Builds a {@link VariableSpec}; {@link #build()} validates every field. */
  public static final class Builder {
    private String name;
    private long[] shape;
    private Initializer initializer = Initializer.zeros();
    private OptimizerConfig optimizer = OptimizerConfig.sgd(0.01);
    private String group = ConsistencyGroup.DEFAULT_NAME;
    private int pinnedShard = UNPINNED;
    private boolean allowNonFinite;

    private Builder() {}

    /** The variable's name (required). */
    public Builder setName(String name) {
      this.name = name;
      return this;
    }

    /** The shape (required); {@code []} for a scalar. */
    public Builder setShape(long... shape) {
      this.shape = shape == null ? null : shape.clone();
      return this;
    }

    /** The initializer (default zeros). */
    public Builder optInitializer(Initializer initializer) {
      this.initializer = Objects.requireNonNull(initializer, "initializer");
      return this;
    }

    /** The optimizer (default SGD at 0.01). */
    public Builder optOptimizer(OptimizerConfig optimizer) {
      this.optimizer = Objects.requireNonNull(optimizer, "optimizer");
      return this;
    }

    /** The consistency group (default {@link ConsistencyGroup#DEFAULT_NAME}). */
    public Builder optGroup(String group) {
      this.group = group;
      return this;
    }

    /** Place the whole variable on this shard, like {@code tf.device("/job:ps/task:i")}. */
    public Builder optPinnedShard(int shard) {
      this.pinnedShard = shard;
      return this;
    }

    /** Accept NaN and infinite values in gradients and assignments. */
    public Builder optAllowNonFinite(boolean allow) {
      this.allowNonFinite = allow;
      return this;
    }

    /** Validates and builds. */
    public VariableSpec build() {
      if (name == null || name.isBlank()) {
        throw new IllegalArgumentException("variable name must not be blank, got '" + name + "'");
      }
      if (shape == null) {
        throw new IllegalArgumentException("variable '" + name + "': shape is required");
      }
      long n = 1;
      for (long d : shape) {
        if (d < 1) {
          throw new IllegalArgumentException("variable '" + name + "': every dimension must be >= 1, got "
              + Arrays.toString(shape));
        }
        n = Math.multiplyExact(n, d);
      }
      if (n > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("variable '" + name + "' has " + n
            + " elements; at most " + (Integer.MAX_VALUE - 8) + " are supported: split it into several variables");
      }
      if (group == null || group.isBlank()) {
        throw new IllegalArgumentException("variable '" + name + "': group must not be blank");
      }
      if (pinnedShard < UNPINNED) {
        throw new IllegalArgumentException("variable '" + name + "': pinnedShard must be >= 0, got " + pinnedShard);
      }
      if (initializer.kind() == Initializer.Kind.VALUES && initializer.values().length() != n) {
        throw new IllegalArgumentException("variable '" + name + "': initial values have shape "
            + Arrays.toString(initializer.values().shape()) + " but the variable's shape is "
            + Arrays.toString(shape));
      }
      return new VariableSpec(this);
    }
  }
}
