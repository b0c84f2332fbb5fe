package io.sparkps.ml.param;

import io.sparkps.ml.param.TrainingOption.Form;
import io.sparkps.ps.spec.Consistency;
import java.util.List;

/**
 * Every training option's declaration ({@link TrainingOption}), in {@link TrainingConfig}'s order:
 * the one place an option's name, doc and Param form are written. Its default and its check are its
 * builder method's. All but {@code checkpointDir}, whose estimator Param also takes {@code none}
 * and leaves room for a directory of the fit's own when unset, so the estimator maps it itself.
 */
public final class TrainingOptions {
  /** Every option but the checkpoint directory, in the config's order. */
  public static final List<TrainingOption<?>> ALL = List.of(
      TrainingOption.of("featuresCol", Form.STRING, "features column name", TrainingConfig::featuresCol,
          TrainingConfigBuilder::optFeaturesCol),
      TrainingOption.of("labelCol", Form.STRING, "label column name (class index or one-hot vector for classifiers, "
          + "number or vector for regressors)", TrainingConfig::labelCol, TrainingConfigBuilder::optLabelCol),
      TrainingOption.of("numWorkers", Form.INT, "workers, the chief included (>= 1)", TrainingConfig::numWorkers,
          TrainingConfigBuilder::optNumWorkers),
      TrainingOption.of("numPs", Form.INT, "parameter servers (>= 1)", TrainingConfig::numPs,
          TrainingConfigBuilder::optNumPs),
      TrainingOption.of("batchSize", Form.INT, "examples per minibatch and worker (>= 1)", TrainingConfig::batchSize,
          TrainingConfigBuilder::optBatchSize),
      TrainingOption.of("epochs", Form.INT, "passes over the data (>= 1; unused when maxSteps is set)",
          TrainingConfig::epochs, TrainingConfigBuilder::optEpochs),
      TrainingOption.of("maxSteps", Form.LONG, "steps per worker in all (>= 1), instead of epochs; 0 to run epochs",
          TrainingConfig::maxSteps, TrainingConfigBuilder::optMaxSteps),
      TrainingOption.ofEnum("consistency", Consistency.class, "ASYNC, SYNC or SSP", TrainingConfig::consistency,
          TrainingConfigBuilder::optConsistency),
      TrainingOption.of("staleness", Form.INT, "SSP staleness bound (>= 0)", TrainingConfig::staleness,
          TrainingConfigBuilder::optStaleness),
      TrainingOption.of("stalenessAwareRate", Form.BOOLEAN, "ASYNC and SSP: whether each gradient is applied at the "
          + "learning rate divided by 1 + its staleness (the updates other workers made since it was computed)",
          TrainingConfig::stalenessAwareRate, TrainingConfigBuilder::optStalenessAwareRate),
      TrainingOption.of("asyncTables", Form.BOOLEAN, "with embeddingColumns: the tables apply each worker's row "
          + "gradients at once (ASYNC), whatever the dense part's consistency", TrainingConfig::asyncTables,
          TrainingConfigBuilder::optAsyncTables),
      TrainingOption.of("seed", Form.LONG, "seed of the minibatch shuffles", TrainingConfig::seed,
          TrainingConfigBuilder::optSeed),
      TrainingOption.of("checkpointInterval", Form.INT, "steps between checkpoints (>= 1), or 0 for automatic: spaced "
          + "so that saving takes at most 1% of the chief's time", TrainingConfig::checkpointInterval,
          TrainingConfigBuilder::optCheckpointInterval),
      TrainingOption.of("checkpointsKept", Form.INT, "checkpoints kept, the newest (>= 1)",
          TrainingConfig::checkpointsKept, TrainingConfigBuilder::optCheckpointsKept),
      TrainingOption.of("gradientAccumulation", Form.INT, "minibatches whose mean gradient a worker pushes as one "
          + "step, all computed from one pull (>= 1; 1: every minibatch is a step)",
          TrainingConfig::gradientAccumulation, TrainingConfigBuilder::optGradientAccumulation),
      TrainingOption.of("bf16Transfers", Form.BOOLEAN, "whether gradients and parameters travel as bfloat16 between "
          + "executors (half the bytes; the ps keeps float32)", TrainingConfig::bf16Transfers,
          TrainingConfigBuilder::optBf16Transfers),
      TrainingOption.of("sparseDensity", Form.DOUBLE, "ASYNC and SSP: the fraction of each large variable's elements "
          + "a worker's push and pull send, those that changed most, the rest kept for later (0: dense)",
          TrainingConfig::sparseDensity, TrainingConfigBuilder::optSparseDensity),
      TrainingOption.of("evalEverySeconds", Form.DOUBLE, "seconds between evaluations at the least (> 0)",
          TrainingConfig::evalEverySeconds, TrainingConfigBuilder::optEvalEverySeconds),
      TrainingOption.of("evalDeferred", Form.BOOLEAN, "whether the evaluator only copies the variables while "
          + "training runs and scores the copies after it (no cores taken from training)", TrainingConfig::evalDeferred,
          TrainingConfigBuilder::optEvalDeferred),
      TrainingOption.json("embeddingColumns", "categorical columns as embedding tables on the ps, "
          + "as a JSON list of {column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, "
          + "maxRowsPerShard, initScale} (EmbeddingColumn.toJson); [] (the default): the network reads featuresCol",
          TrainingConfig::embeddingColumns, TrainingConfigBuilder::optEmbeddingColumns, EmbeddingColumn::toJson,
          v -> EmbeddingColumn.fromJson((String) v)),
      TrainingOption.converted("numericCols", Form.STRINGS, "with embeddingColumns: the numeric columns the network "
          + "reads after the pooled embeddings (null reads 0)", TrainingConfig::numericCols,
          TrainingConfigBuilder::optNumericCols, v -> v.toArray(new String[0]), v -> List.of((String[]) v)),
      TrainingOption.ofEnum("numericTransform", NumericTransform.class, "with embeddingColumns: how the network reads "
          + "numericCols: NONE (as they are) or LOG1P (sign(x) ln(1 + |x|), for count-like columns as click logs have), "
          + "the same in training, evaluation and scoring", TrainingConfig::numericTransform,
          TrainingConfigBuilder::optNumericTransform),
      TrainingOption.of("factorizationTerm", Form.BOOLEAN, "with embeddingColumns: whether the network's last input "
          + "is the sum of the pairwise dot products of the pooled embeddings (as DeepFM's factorization machine; the "
          + "columns then need one dim)", TrainingConfig::factorizationTerm, TrainingConfigBuilder::optFactorizationTerm),
      TrainingOption.of("widePart", Form.BOOLEAN, "with embeddingColumns: whether each column also has a "
          + "1-dimensional embedding (a weight per id, as Wide & Deep's wide part), read after the numeric columns, one "
          + "input per column", TrainingConfig::widePart, TrainingConfigBuilder::optWidePart));

  private TrainingOptions() {}

  /** The option named {@code name}; refuses a name that is none. */
  public static TrainingOption<?> named(String name) {
    return ALL.stream().filter(o -> o.name().equals(name)).findFirst().orElseThrow(() -> new IllegalArgumentException(
        "no training option is named '" + name + "'; they are " + ALL));
  }
}
