package io.sparkps.bench;

import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.data.IdxDataFrames;
import io.sparkps.ml.data.IdxFile;
import io.sparkps.ps.spec.Consistency;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.conf.layers.SubsamplingLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.nd4j.linalg.schedule.ScheduleType;
import org.nd4j.linalg.schedule.StepSchedule;

/**
 * A LeNet-like CNN (conv 5x5x20, max-pool, conv 5x5x50, max-pool, dense 500 with dropout 0.5,
 * softmax 10) on Fashion-MNIST: SparkPS through the estimator (2 SYNC workers of one core each, 1
 * ps, over the shard's socket as between executors) against single-process DL4J with every core (a
 * child JVM with as many OpenMP and OpenBLAS threads as cores, DL4J's own loop over shuffled
 * minibatches in memory, timed around it), the same epochs and the same minibatch a step averages
 * over (each SparkPS worker takes half of it, so both make the same number of updates), in rounds
 * that alternate which runs first. Prints each one's examples/s (SparkPS's wall time of {@code
 * fit}, its launch included) and test accuracy on the 10,000 test images.
 *
 * <p>Arguments: {@code [epochs] [batch] [rounds] [decay]} (default 8, 64, 1, 0); batch is the
 * minibatch of a step, the two workers' together; with decay D, Adam's rate (1e-3) halves every D
 * epochs' updates (a schedule by iteration, as both make the same number of updates).
 */
public final class CnnBenchmark {
  private CnnBenchmark() {}

  /** The CNN, its Adam rate 1e-3 halved every {@code decayEvery} updates (0: never). */
  static MultiLayerConfiguration lenet(int decayEvery) {
    Adam adam = decayEvery == 0 ? new Adam(1e-3)
        : new Adam(new StepSchedule(ScheduleType.ITERATION, 1e-3, 0.5, decayEvery));
    return new NeuralNetConfiguration.Builder().seed(42).dataType(DataType.FLOAT).updater(adam).list()
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(20).activation(Activation.RELU).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new ConvolutionLayer.Builder(5, 5).nOut(50).activation(Activation.RELU).build())
        .layer(new SubsamplingLayer.Builder(SubsamplingLayer.PoolingType.MAX).kernelSize(2, 2).stride(2, 2).build())
        .layer(new DenseLayer.Builder().nOut(500).activation(Activation.RELU).dropOut(0.5).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(10).activation(Activation.SOFTMAX)
            .build())
        .setInputType(InputType.convolutionalFlat(28, 28, 1))
        .build();
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--single-process")) {
      singleProcess(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]));
      System.exit(0);
    }
    int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 8;
    int batch = args.length > 1 ? Integer.parseInt(args[1]) : 64;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    int decayEpochs = args.length > 3 ? Integer.parseInt(args[3]) : 0;
    int decayEvery = decayEpochs * (60_000 / batch); // updates: the same for both, who step with the same minibatch
    if (batch % 2 != 0) {
      throw new IllegalArgumentException("minibatch " + batch + " is odd: each of the 2 workers takes half, give an even one");
    }
    SparkSession spark = BenchSupport.localSpark("sparkps-cnn-benchmark");
    DataSet test = testSet();
    System.out.printf(Locale.ROOT, "LeNet-like CNN on Fashion-MNIST: %d epochs, minibatch %d, %d cores, "
        + "OMP_NUM_THREADS=%s, %d rounds, Adam 1e-3 halved every %d updates (0: never)%n", epochs, batch,
        Runtime.getRuntime().availableProcessors(), System.getenv("OMP_NUM_THREADS"), rounds, decayEvery);
    try {
      Dataset<Row> train = IdxDataFrames.fashionMnist(spark, IdxDataFrames.FASHION_MNIST, "train", 2).repartition(2)
          .cache();
      long rows = train.count();
      List<double[]> sparkps = new ArrayList<>();
      List<double[]> single = new ArrayList<>();
      for (int round = 0; round < rounds; round++) {
        for (int k = 0; k < 2; k++) {
          boolean sparkpsNow = (round + k) % 2 == 0;
          double[] f = sparkpsNow ? sparkps(train, rows, epochs, batch, decayEvery, test)
              : allCores(epochs, batch, decayEvery);
          (sparkpsNow ? sparkps : single).add(f);
          System.out.printf(Locale.ROOT, "  round %d  %-40s %7.0f examples/s  test accuracy %.4f  %7.1f s%n", round + 1,
              sparkpsNow ? "SparkPS, 2 SYNC workers, socket" : "single-process DL4J, all cores", f[0], f[1], f[2]);
        }
      }
      for (int round = 0; round < rounds; round++) {
        System.out.printf(Locale.ROOT, "round %d: SparkPS / single process: %.2fx the examples/s; accuracy %.4f vs "
            + "%.4f%n", round + 1, sparkps.get(round)[0] / single.get(round)[0], sparkps.get(round)[1],
            single.get(round)[1]);
      }
    } finally {
      spark.stop();
    }
    System.exit(0); // a barrier stage in local mode leaves a non-daemon timer thread
  }

  private static double[] sparkps(Dataset<Row> train, long rows, int epochs, int batch, int decayEvery, DataSet test) {
    System.setProperty(io.sparkps.ps.PsClient.SAME_JVM_PROPERTY, "false");
    try {
      long t0 = System.nanoTime();
      Dl4jModel model = new Dl4jEstimator().setNetworkJson(lenet(decayEvery).toJson()).setNumWorkers(2).setNumPs(1)
          .setBatchSize(batch / 2).setEpochs(epochs).setConsistency(Consistency.SYNC).setSeed(7).fit(train);
      double seconds = (System.nanoTime() - t0) / 1e9;
      long examples = epochs * (rows / batch) * batch;
      return new double[] {examples / seconds, accuracy((MultiLayerNetwork) model.network(), test), seconds};
    } finally {
      System.clearProperty(io.sparkps.ps.PsClient.SAME_JVM_PROPERTY);
    }
  }

  /** Single-process DL4J in a child JVM with every core. */
  private static double[] allCores(int epochs, int batch, int decayEvery) throws Exception {
    String[] f = BenchSupport.childResult(CnnBenchmark.class, "-Xmx6g", "--single-process", String.valueOf(epochs),
        String.valueOf(batch), String.valueOf(decayEvery));
    return new double[] {Double.parseDouble(f[1]), Double.parseDouble(f[2]), Double.parseDouble(f[3])};
  }

  private static void singleProcess(int epochs, int batch, int decayEvery) throws Exception {
    Path dir = IdxDataFrames.FASHION_MNIST;
    float[] x = BenchSupport.scaled(IdxFile.read(dir.resolve("train-images-idx3-ubyte.gz")).values());
    float[] y = IdxFile.read(dir.resolve("train-labels-idx1-ubyte.gz")).values();
    DataSet test = testSet();
    MultiLayerNetwork net = new MultiLayerNetwork(lenet(decayEvery));
    net.init();
    net.fit(BenchSupport.minibatches(x, y, batch, batch, new Random(1)).get(0)); // the JIT's and ND4J's first call, untimed
    net = new MultiLayerNetwork(lenet(decayEvery));
    net.init();
    List<List<DataSet>> perEpoch = new ArrayList<>();
    for (int e = 0; e < epochs; e++) {
      perEpoch.add(BenchSupport.minibatches(x, y, y.length, batch, new Random(100 + e)));
    }
    long examples = 0;
    long nanos = 0;
    double accuracy = Double.NaN;
    for (int e = 0; e < epochs; e++) {
      long t0 = System.nanoTime();
      for (DataSet d : perEpoch.get(e)) {
        net.fit(d);
        examples += batch;
      }
      nanos += System.nanoTime() - t0; // the test accuracy after each epoch is left out of the time
      accuracy = accuracy(net, test);
      System.out.printf(Locale.ROOT, "PROGRESS   single process, epoch %d: test accuracy %.4f%n", e + 1, accuracy);
    }
    double seconds = nanos / 1e9;
    System.out.printf(Locale.ROOT, "RESULT %f %f %f%n", examples / seconds, accuracy, seconds);
  }

  private static DataSet testSet() throws Exception {
    Path dir = IdxDataFrames.FASHION_MNIST;
    IdxFile tx = IdxFile.read(dir.resolve("t10k-images-idx3-ubyte.gz"));
    INDArray features = Nd4j.create(BenchSupport.scaled(tx.values()), new long[] {tx.items(), 784}, 'c');
    return new DataSet(features,
        BenchSupport.oneHot(IdxFile.read(dir.resolve("t10k-labels-idx1-ubyte.gz")).values(), 0, tx.items()));
  }

  private static double accuracy(MultiLayerNetwork net, DataSet test) {
    return net.evaluate(new org.nd4j.linalg.dataset.adapter.SingletonDataSetIterator(test)).accuracy();
  }
}
