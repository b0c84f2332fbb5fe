package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.evaluation.RegressionEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.NumericType;

/** A model's figures on labelled data, with Spark ML's evaluators (what {@code evaluate} prints). */
final class Metrics {
  private Metrics() {}

  /**
   * For a binary classifier the area under the ROC curve (exact, no bins) and the log loss first, as
   * click-through models are measured (accuracy says little of a label clicked a quarter of the
   * time); then, for any classifier, accuracy and weighted precision/recall/F1; RMSE, MAE and R2 for
   * a regressor with one output. Empty when the label column is not a single number per row.
   */
  static Map<String, Double> of(Dl4jModel model, Dataset<Row> data, String labelCol) {
    DataOptions.require(data, labelCol, "--label");
    Map<String, Double> out = new LinkedHashMap<>();
    if (!(data.schema().apply(labelCol).dataType() instanceof NumericType)) {
      return out;
    }
    Dataset<Row> predicted = model.transform(data).cache();
    try {
      String prediction = model.getOrDefault(model.predictionCol());
      out.put("examples", (double) predicted.count());
      if (model.isClassifier()) {
        if (model.numOutputs() == 2) {
          String probability = model.getOrDefault(model.probabilityCol());
          out.put("auc", new BinaryClassificationEvaluator().setLabelCol(labelCol).setRawPredictionCol(probability)
              .setNumBins(0).evaluate(predicted));
          out.put("logLoss", new MulticlassClassificationEvaluator().setLabelCol(labelCol)
              .setProbabilityCol(probability).setMetricName("logLoss").evaluate(predicted));
        }
        for (String metric : new String[] {"accuracy", "weightedPrecision", "weightedRecall", "f1"}) {
          out.put(metric, new MulticlassClassificationEvaluator().setLabelCol(labelCol).setPredictionCol(prediction)
              .setMetricName(metric).evaluate(predicted));
        }
      } else if (predicted.schema().apply(prediction).dataType() instanceof NumericType) {
        for (String metric : new String[] {"rmse", "mae", "r2"}) {
          out.put(metric, new RegressionEvaluator().setLabelCol(labelCol).setPredictionCol(prediction)
              .setMetricName(metric).evaluate(predicted));
        }
      }
      return out;
    } finally {
      predicted.unpersist();
    }
  }

  /**
   * The figures that lead a summary of {@code metrics}: a binary label's AUC and log loss, as
   * click-through is measured; else a classifier's accuracy, else a regressor's R2 (or RMSE); else
   * the log loss; none when it has none of these.
   */
  static java.util.List<String> leading(Map<String, ?> metrics) {
    if (metrics.get("auc") instanceof Number) {
      return metrics.get("logLoss") instanceof Number ? java.util.List.of("auc", "logLoss") : java.util.List.of("auc");
    }
    for (String key : new String[] {"accuracy", "r2", "rmse", "logLoss"}) {
      if (metrics.get(key) instanceof Number) {
        return java.util.List.of(key);
      }
    }
    return java.util.List.of();
  }

  /** The one figure a summary leads with (see {@link #leading}), or null. */
  static String headline(Map<String, ?> metrics) {
    java.util.List<String> keys = leading(metrics);
    return keys.isEmpty() ? null : keys.get(0);
  }

  /**
   * What a one-line summary says of {@code metrics}: "auc 0.7321, logLoss 0.4817" for a binary
   * classifier, "accuracy 0.8712" for another, "r2 0.9120" for a regressor; null when none applies.
   */
  static String line(Map<String, Double> metrics) {
    java.util.List<String> keys = leading(metrics);
    if (keys.isEmpty()) {
      return null;
    }
    StringBuilder line = new StringBuilder();
    for (String key : keys) {
      line.append(line.length() == 0 ? "" : ", ").append(String.format(java.util.Locale.ROOT, "%s %.4f", key,
          metrics.get(key)));
    }
    return line.toString();
  }

}
