package io.sparkps.ml.datasets;

import java.util.Arrays;
import java.util.Comparator;

/** The area under the ROC curve by the rank-sum (Mann-Whitney) statistic, ties counted as half. */
final class Auc {
  private Auc() {}

  static double of(double[] scores, boolean[] positive) {
    Integer[] order = new Integer[scores.length];
    Arrays.setAll(order, i -> i);
    Arrays.sort(order, Comparator.comparingDouble(i -> scores[i]));
    double rankSum = 0;
    long positives = 0;
    for (int i = 0; i < order.length;) {
      int j = i;
      while (j < order.length && scores[order[j]] == scores[order[i]]) {
        j++;
      }
      double midRank = (i + 1 + j) / 2.0;
      for (int k = i; k < j; k++) {
        if (positive[order[k]]) {
          rankSum += midRank;
          positives++;
        }
      }
      i = j;
    }
    long negatives = scores.length - positives;
    return (rankSum - positives * (positives + 1) / 2.0) / (positives * (double) negatives);
  }
}
