package io.sparkps.spark.ui;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The tab's evaluation chart lists a binary label's AUC and log loss first, as click-through is measured. */
class SparkPsPageTest {
  private static SparkPsEvents.StepRow evaluation(long step, Map<String, Double> metrics) {
    SparkPsEvents.StepRow r = new SparkPsEvents.StepRow();
    r.role = "EVALUATOR";
    r.step = step;
    r.metrics = metrics;
    return r;
  }

  @Test
  void aBinaryLabelsEvaluations_leadWithAucAndLoss_othersGoByName() {
    List<SparkPsEvents.StepRow> binary = List.of(
        evaluation(10, Map.of("accuracy", 0.76, "auc", 0.70, "f1", 0.66, "loss", 0.52)),
        evaluation(20, Map.of("accuracy", 0.77, "auc", 0.73, "f1", 0.67, "loss", 0.50)));
    assertEquals(List.of("auc", "loss", "accuracy", "f1"), SparkPsPage.evaluationOrder(binary));
    List<SparkPsEvents.StepRow> classes = List.of(evaluation(10, Map.of("recall", 0.8, "accuracy", 0.81, "loss", 0.6)));
    assertEquals(List.of("accuracy", "loss", "recall"), SparkPsPage.evaluationOrder(classes));
    String charts = SparkPsPage.charts(binary);
    assertTrue(charts.contains(">auc<") && charts.contains(">loss<"), charts);
  }
}
