package io.sparkps.ps.spec;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Every update rule a parameter server applies, each named once: those of dense variables ({@link
 * OptimizerConfig}, ND4J's updaters' formulas and defaults) and those of embedding tables' rows
 * ({@link EmbeddingSpec}: lazy, a row's state created when the row is first touched and changed only
 * when a gradient for it arrives, so a step costs what it touches, not the table's size). A rule
 * both use is the same rule on either. On the wire, each is its name.
 */
public enum Optimizer {
  /** {@code w -= lr * g}; no state. Variables and tables. */
  SGD(true, true),
  /** Classical momentum: {@code v = mu * v - lr * g; w += v}. Variables. */
  MOMENTUM(true, false),
  /** Nesterov momentum as ND4J's {@code Nesterovs}. Variables. */
  NESTEROV(true, false),
  /** Adam as ND4J's {@code Adam}. Variables; a table's Adam is {@link #LAZY_ADAM}. */
  ADAM(true, false),
  /**
   * Per element: {@code s += g^2; w -= lr * g / (sqrt(s) + eps)}, each accumulator starting at
   * {@code eps} (as ND4J's AdaGrad: a row's first small gradients then take small steps, not whole
   * steps of {@code lr}). Variables and tables.
   */
  ADAGRAD(true, true),
  /** RMSProp as ND4J's {@code RmsProp}. Variables. */
  RMSPROP(true, false),
  /** No update: the variable keeps its value (a frozen layer). Variables. */
  NO_OP(true, false),
  /** One accumulator per row (FBGEMM's and TorchRec's row-wise AdaGrad): {@code s += mean(g^2)}. Tables. */
  ROWWISE_ADAGRAD(false, true),
  /** Adam on the touched rows only, bias-corrected by each row's update count. Tables. */
  LAZY_ADAM(false, true),
  /** FTRL-Proximal (McMahan et al., 2013), with L1 and L2: sparse rows for wide models. Tables. */
  FTRL(false, true);

  private final boolean variables;
  private final boolean tables;

  Optimizer(boolean variables, boolean tables) {
    this.variables = variables;
    this.tables = tables;
  }

  /** Whether dense variables can use it. */
  public boolean forVariables() {
    return variables;
  }

  /** Whether embedding tables can use it. */
  public boolean forTables() {
    return tables;
  }

  /** The optimizers embedding tables can use. */
  public static List<Optimizer> ofTables() {
    return Arrays.stream(values()).filter(Optimizer::forTables).toList();
  }

  /** The optimizers dense variables can use. */
  public static List<Optimizer> ofVariables() {
    return Arrays.stream(values()).filter(Optimizer::forVariables).toList();
  }

  /**
   * The optimizer named {@code name}, in any case, for an embedding table; a name that is none, or an
   * optimizer of dense variables only, is refused, naming the tables' optimizers (callers put the
   * table or column it was for before the message).
   */
  public static Optimizer ofTable(String name) {
    String upper = name == null ? "" : name.trim().toUpperCase(Locale.ROOT);
    for (Optimizer o : values()) {
      if (o.name().equals(upper)) {
        return o.checkedForTables();
      }
    }
    throw new IllegalArgumentException("optimizer must be one of " + ofTables() + ", got '" + name + "'");
  }

  /** This optimizer, refused with the tables' optimizers named unless tables can use it. */
  public Optimizer checkedForTables() {
    if (!tables) {
      throw new IllegalArgumentException("optimizer " + this + " is one of dense variables; a table's must be one of "
          + ofTables() + (this == ADAM ? " (LAZY_ADAM is Adam on the rows a step touches)" : ""));
    }
    return this;
  }
}
