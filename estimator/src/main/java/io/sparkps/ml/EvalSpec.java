package io.sparkps.ml;

import java.io.Serializable;
import java.util.Objects;

/**
 * How to evaluate while training, as tf-yarn's EvalSpec: the held-out input (same columns as the
 * training data), the least time between evaluations ({@code throttleSeconds}), and how many rows
 * at most to score (they are collected once and shipped to the evaluator task). Immutable; made
 * with {@link #builder()}.
 */
public final class EvalSpec implements Serializable {
  private static final long serialVersionUID = 1L;
  private final InputFn input;
  private final double throttleSeconds;
  private final int maxRows;
  private final boolean deferred;

  private EvalSpec(InputFn input, double throttleSeconds, int maxRows, boolean deferred) {
    this.input = input;
    this.throttleSeconds = throttleSeconds;
    this.maxRows = maxRows;
    this.deferred = deferred;
  }

  /** A builder with the defaults: an evaluation at most every second, on at most 10,000 rows. */
  public static Builder builder() {
    return new Builder();
  }

  /** The held-out data, or null when the estimator is given a DataFrame directly. */
  public InputFn input() {
    return input;
  }

  /** The least seconds between two evaluations. */
  public double throttleSeconds() {
    return throttleSeconds;
  }

  /** Whether the evaluator copies the variables while training runs and scores the copies after it. */
  public boolean deferred() {
    return deferred;
  }

  /** The most rows scored. */
  public int maxRows() {
    return maxRows;
  }

  @Override
  public String toString() {
    return "EvalSpec{throttleSeconds=" + throttleSeconds + ", maxRows=" + maxRows + (deferred ? ", deferred" : "")
        + (input == null ? "" : ", input=" + input.getClass().getName()) + "}";
  }

  /** Builds an {@link EvalSpec}. */
  public static final class Builder {
    private InputFn input;
    private double throttleSeconds = 1.0;
    private int maxRows = 10_000;
    private boolean deferred;

    private Builder() {}

    /** The held-out data. */
    public Builder optInput(InputFn fn) {
      input = Objects.requireNonNull(fn, "input");
      return this;
    }

    /** The least seconds between evaluations (> 0). */
    public Builder optThrottleSeconds(double seconds) {
      if (!(seconds > 0)) {
        throw new IllegalArgumentException("throttleSeconds is " + seconds + "; it must be > 0");
      }
      throttleSeconds = seconds;
      return this;
    }

    /** The most rows to score (>= 1). */
    public Builder optMaxRows(int rows) {
      maxRows = TrainSpec.Builder.atLeast(rows, 1, "maxRows");
      return this;
    }

    /**
     * Copies of the variables taken every throttleSeconds while training runs, scored only once
     * it has stopped, so that scoring takes no cores from training ({@link Dl4jEstimator#setEvalDeferred}).
     */
    public Builder optDeferred(boolean deferred) {
      this.deferred = deferred;
      return this;
    }

    /** The spec. */
    public EvalSpec build() {
      return new EvalSpec(input, throttleSeconds, maxRows, deferred);
    }
  }
}
