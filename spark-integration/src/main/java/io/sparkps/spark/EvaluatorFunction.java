package io.sparkps.spark;

import java.io.Serializable;

/** The code of the evaluator task: polls the parameter servers as training advances. */
@FunctionalInterface
public interface EvaluatorFunction extends Serializable {
  /** Evaluates until {@link EvaluatorContext#isStopping()}; training never waits for it. */
  void run(EvaluatorContext context) throws Exception;
}
