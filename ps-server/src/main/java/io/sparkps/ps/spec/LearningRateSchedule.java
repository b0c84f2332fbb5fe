package io.sparkps.ps.spec;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A learning rate as a function of the update's iteration (0-based), with the same formulas as
 * ND4J's {@code org.nd4j.linalg.schedule} classes in iteration mode, so a schedule taken from a
 * DL4J layer gives identical values on the server.
 */
public final class LearningRateSchedule implements java.io.Serializable {
  private static final long serialVersionUID = 1L;

  /** The schedule's formula. */
  public enum Kind { FIXED, EXPONENTIAL, STEP, INVERSE, POLY, SIGMOID, MAP }

  private final Kind kind;
  private final double initial;
  private final double gamma;
  private final double power;
  private final double step;
  private final long maxIter;
  private final TreeMap<Long, Double> values;

  private LearningRateSchedule(
      Kind kind, double initial, double gamma, double power, double step, long maxIter,
      Map<Long, Double> values) {
    this.kind = kind;
    this.initial = initial;
    this.gamma = gamma;
    this.power = power;
    this.step = step;
    this.maxIter = maxIter;
    this.values = new TreeMap<>(values);
  }

  /** The same rate at every iteration. */
  public static LearningRateSchedule fixed(double rate) {
    return new LearningRateSchedule(Kind.FIXED, rate, 0, 0, 0, 0, Map.of());
  }

  /** {@code initial * gamma^i}. */
  public static LearningRateSchedule exponential(double initial, double gamma) {
    return new LearningRateSchedule(Kind.EXPONENTIAL, initial, gamma, 0, 0, 0, Map.of());
  }

  /** {@code initial * decayRate^floor(i / step)}. */
  public static LearningRateSchedule step(double initial, double decayRate, double step) {
    if (step <= 0) {
      throw new IllegalArgumentException("step must be > 0, got " + step);
    }
    return new LearningRateSchedule(Kind.STEP, initial, decayRate, 0, step, 0, Map.of());
  }

  /** {@code initial / (1 + gamma * i)^power}. */
  public static LearningRateSchedule inverse(double initial, double gamma, double power) {
    return new LearningRateSchedule(Kind.INVERSE, initial, gamma, power, 0, 0, Map.of());
  }

  /** {@code initial * (1 + i / maxIter)^power}, as ND4J's {@code PolySchedule} computes it. */
  public static LearningRateSchedule poly(double initial, double power, long maxIter) {
    if (maxIter <= 0) {
      throw new IllegalArgumentException("maxIter must be > 0, got " + maxIter);
    }
    return new LearningRateSchedule(Kind.POLY, initial, 0, power, 0, maxIter, Map.of());
  }

  /** {@code initial / (1 + exp(-gamma * (i - stepSize)))}. */
  public static LearningRateSchedule sigmoid(double initial, double gamma, long stepSize) {
    return new LearningRateSchedule(Kind.SIGMOID, initial, gamma, 0, stepSize, 0, Map.of());
  }

  /** The value of the largest key at or below the iteration; the map must have a key 0. */
  public static LearningRateSchedule map(Map<Long, Double> values) {
    Objects.requireNonNull(values, "values");
    if (!values.containsKey(0L)) {
      throw new IllegalArgumentException("a map schedule needs a value for iteration 0, got keys " + values.keySet());
    }
    return new LearningRateSchedule(Kind.MAP, values.get(0L), 0, 0, 0, 0, values);
  }

  /** The rate for a 0-based iteration. */
  public double valueAt(long iteration) {
    return switch (kind) {
      case FIXED -> initial;
      case EXPONENTIAL -> initial * Math.pow(gamma, iteration);
      case STEP -> initial * Math.pow(gamma, Math.floor(iteration / step));
      case INVERSE -> initial / Math.pow(1 + gamma * iteration, power);
      case POLY -> initial * Math.pow(1 + ((double) iteration) / maxIter, power);
      case SIGMOID -> initial / (1.0 + Math.exp(-gamma * (iteration - step)));
      case MAP -> values.floorEntry(iteration).getValue();
    };
  }

  /** The formula. */
  public Kind kind() {
    return kind;
  }

  /** The rate at iteration 0 (for MAP: the value at key 0). */
  public double initial() {
    return initial;
  }

  /** Decay factor of EXPONENTIAL, STEP (decay rate), INVERSE and SIGMOID. */
  public double gamma() {
    return gamma;
  }

  /** Exponent of INVERSE and POLY. */
  public double power() {
    return power;
  }

  /** Step of STEP, step size of SIGMOID. */
  public double stepSize() {
    return step;
  }

  /** Iterations of POLY. */
  public long maxIter() {
    return maxIter;
  }

  /** Values of MAP by iteration. */
  public Map<Long, Double> values() {
    return Collections.unmodifiableMap(values);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof LearningRateSchedule s
        && s.kind == kind && s.initial == initial && s.gamma == gamma && s.power == power
        && s.step == step && s.maxIter == maxIter && s.values.equals(values);
  }

  @Override
  public int hashCode() {
    return Objects.hash(kind, initial, gamma, power, step, maxIter, values);
  }

  @Override
  public String toString() {
    return kind == Kind.FIXED ? Double.toString(initial) : kind + "(initial=" + initial + ")";
  }
}
