package io.sparkps.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.dataset.DataSet;

/**
 * The floor under every data-parallel trainer of {@link TrainingBenchmark}: two threads (one per
 * worker), each with its own network, computing the gradients of its half of the minibatches and
 * nothing else: no update, no transfer, no Spark. No trainer that computes those gradients on
 * these cores can take less time, so the parameter-averaging baseline's time over this one is
 * the largest ratio any trainer can reach against it in the same round.
 */
final class GradientFloor {
  private GradientFloor() {}

  /**
   * Seconds for {@code workers} threads to compute the gradients of {@code batches}, split evenly;
   * with {@code workersBackprop}, with the dense layers' backward pass of SparkPS's workers.
   */
  static double seconds(MultiLayerConfiguration conf, List<DataSet> batches, int workers, boolean workersBackprop)
      throws Exception {
    List<MultiLayerNetwork> nets = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      MultiLayerNetwork net = new MultiLayerNetwork(conf.clone());
      net.init();
      if (workersBackprop && io.sparkps.ml.network.BenchDenseBackprop.install(net) == 0) {
        throw new IllegalStateException("no dense layer of the benchmark's network takes the workers' backward pass");
      }
      nets.add(net);
    }
    int per = batches.size() / workers;
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    try {
      long t0 = System.nanoTime();
      List<Future<Double>> scores = new ArrayList<>();
      for (int w = 0; w < workers; w++) {
        MultiLayerNetwork net = nets.get(w);
        List<DataSet> mine = batches.subList(w * per, (w + 1) * per);
        scores.add(pool.submit(() -> {
          double sum = 0;
          for (DataSet d : mine) {
            net.setInput(d.getFeatures());
            net.setLabels(d.getLabels());
            net.computeGradientAndScore();
            sum += net.score();
          }
          return sum;
        }));
      }
      for (int w = 0; w < workers; w++) {
        double loss;
        try {
          loss = scores.get(w).get(30, TimeUnit.MINUTES);
        } catch (TimeoutException e) {
          throw new IllegalStateException("gradient thread " + w + " of " + workers + " did not finish its "
              + per + " gradients in 30 minutes", e);
        }
        if (!Double.isFinite(loss)) { // the gradients were computed: their losses are finite
          throw new IllegalStateException("gradient thread " + w + ": a loss is not finite: " + loss);
        }
      }
      return (System.nanoTime() - t0) / 1e9;
    } finally {
      pool.shutdownNow();
    }
  }
}
