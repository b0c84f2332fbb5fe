package io.sparkps.ps.spec;

import java.util.Objects;

/**
 * A named group of variables that share a {@link Consistency} mode and a worker count.
 *
 * <p>Every variable belongs to one group; {@link #DEFAULT_NAME} is {@link Consistency#ASYNC} and
 * exists on every shard.
 */
public record ConsistencyGroup(String name, Consistency mode, int numWorkers, int staleness,
    boolean stalenessAwareRate) {
  /** The group of variables created without naming one. */
  public static final String DEFAULT_NAME = "default";

  /** A group without the staleness-aware rate. */
  public ConsistencyGroup(String name, Consistency mode, int numWorkers, int staleness) {
    this(name, mode, numWorkers, staleness, false);
  }

  /** Validates the fields; see the factories for the usual forms. */
  public ConsistencyGroup {
    Objects.requireNonNull(mode, "mode");
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("group name must not be blank, got '" + name + "'");
    }
    if (mode != Consistency.ASYNC && numWorkers < 1) {
      throw new IllegalArgumentException(
          "group '" + name + "': numWorkers must be >= 1 for " + mode + ", got " + numWorkers);
    }
    if (stalenessAwareRate && mode == Consistency.SYNC) {
      throw new IllegalArgumentException("group '" + name + "': a SYNC group's gradients are never stale; the "
          + "staleness-aware rate is for ASYNC and SSP groups");
    }
    if (mode == Consistency.SSP && staleness < 0) {
      throw new IllegalArgumentException(
          "group '" + name + "': staleness must be >= 0, got " + staleness);
    }
  }

  /**
   * This group with gradients applied at a rate scaled to their staleness: a gradient computed from
   * values that {@code tau} updates have changed since (by other workers) is applied with the
   * learning rate divided by {@code 1 + tau}, as staleness-aware asynchronous SGD does (Zhang et
   * al., 2016). With N workers taking turns, tau is about N - 1, so the rate per example matches a
   * SYNC step's. Only gradients that say which version they were computed from (those a
   * {@code PsClient} pushes after a whole pull) are scaled.
   */
  public ConsistencyGroup withStalenessAwareRate() {
    return new ConsistencyGroup(name, mode, numWorkers, staleness, true);
  }

  /** Apply on arrival. */
  public static ConsistencyGroup async(String name) {
    return new ConsistencyGroup(name, Consistency.ASYNC, 0, 0);
  }

  /** Average the gradients of {@code numWorkers} workers per step and apply once. */
  public static ConsistencyGroup sync(String name, int numWorkers) {
    return new ConsistencyGroup(name, Consistency.SYNC, numWorkers, 0);
  }

  /** Apply on arrival; a worker reads at most {@code staleness} clocks ahead of the slowest. */
  public static ConsistencyGroup ssp(String name, int numWorkers, int staleness) {
    return new ConsistencyGroup(name, Consistency.SSP, numWorkers, staleness);
  }
}
