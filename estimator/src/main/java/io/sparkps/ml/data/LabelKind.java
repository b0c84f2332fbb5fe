package io.sparkps.ml.data;

/**
 * How a label column holds its targets. Every kind becomes a row of the network's output width
 * when read: a class index turns into a one-hot row.
 */
public enum LabelKind {
  /** A whole number in [0, classes) (classification). */
  CLASS_INDEX,
  /** A vector or array of class probabilities, usually one-hot (classification). */
  ONE_HOT,
  /** One real value, or a vector or array of them, per row (regression). */
  VALUES
}
