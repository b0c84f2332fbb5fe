package io.sparkps.cli;

import io.sparkps.ml.Dl4jModel;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.evaluation.RegressionEvaluator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.NumericType;

/** A model's figures on labelled data, with Spark ML's evaluators (what {@code evaluate} prints). */
final class Metrics {
  private Metrics() {}

  /**
   * Accuracy, weighted precision/recall/F1 for a classifier; RMSE, MAE and R2 for a regressor with
   * one output. Empty when the label column is not a single number per row.
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
}
