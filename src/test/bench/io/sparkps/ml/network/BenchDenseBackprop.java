package io.sparkps.ml.network;

import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;

/** For the benchmarks: the dense layers of SparkPS's workers ({@link ForwardReuse}) in a network of their own. */
public final class BenchDenseBackprop {
  private BenchDenseBackprop() {}

  /** Gives {@code net}'s dense layers the workers' backward pass; returns how many. */
  public static int install(MultiLayerNetwork net) {
    return ForwardReuse.install(net);
  }

  /** The Spark conf key that turns it off for the workers (set to false). */
  public static String conf() {
    return io.sparkps.spark.SparkPsConf.TRAIN_REUSE_FORWARD_PASS.key();
  }
}
