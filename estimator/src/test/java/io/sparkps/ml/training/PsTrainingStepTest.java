package io.sparkps.ml.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.PsToken;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.inputs.InputType;
import org.deeplearning4j.nn.conf.layers.BatchNormalization;
import org.deeplearning4j.nn.conf.layers.ConvolutionLayer;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.AdaDelta;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * One worker, SYNC, one ps: the parameters after k steps equal {@code MultiLayerNetwork.fit} on
 * the same minibatches, to 1e-5.
 */
public class PsTrainingStepTest {
  private static final int STEPS = 12;

  private static MultiLayerConfiguration mlp() {
    return mlp(20, 16);
  }

  private static MultiLayerConfiguration mlp(int in, int hidden) {
    return new NeuralNetConfiguration.Builder().seed(12).dataType(DataType.FLOAT).updater(new Adam(0.01)).l2(1e-3)
        .list()
        .layer(new DenseLayer.Builder().nIn(in).nOut(hidden).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(hidden).nOut(3)
            .activation(Activation.SOFTMAX).build())
        .build();
  }

  private static MultiLayerConfiguration cnnWithBatchNorm() {
    return new NeuralNetConfiguration.Builder().seed(7).dataType(DataType.FLOAT).updater(new Nesterovs(0.05, 0.9))
        .list()
        .layer(new ConvolutionLayer.Builder(3, 3).nOut(4).activation(Activation.IDENTITY).build())
        .layer(new BatchNormalization.Builder().build())
        .layer(new DenseLayer.Builder().nOut(10).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nOut(3).activation(Activation.SOFTMAX).build())
        .setInputType(InputType.convolutional(8, 8, 1))
        .build();
  }

  public static List<DataSet> batches(long[] featureShape, int classes, long seed) {
    Nd4j.getRandom().setSeed(seed);
    List<DataSet> out = new ArrayList<>();
    for (int i = 0; i < STEPS; i++) {
      INDArray x = Nd4j.rand(DataType.FLOAT, featureShape);
      INDArray y = Nd4j.zeros(DataType.FLOAT, featureShape[0], classes);
      for (int r = 0; r < featureShape[0]; r++) {
        y.putScalar(r, (r + i) % classes, 1f);
      }
      out.add(new DataSet(x, y));
    }
    return out;
  }

  public static void assertSameTraining(MultiLayerConfiguration conf, List<DataSet> data) {
    assertSameTraining(conf, data, false, false);
  }

  /**
   * With {@code workerUpdates}: DL4J's updaters run in the worker, the shard (over its socket) only
   * subtracts, and every update and pull goes as sparse pairs of all nonzero elements (density 1).
   * With {@code overlap}, the transfers overlap the passes layer by layer ({@link OverlappedTransfers}).
   */
  private static void assertSameTraining(MultiLayerConfiguration conf, List<DataSet> data, boolean workerUpdates,
      boolean overlap) {
    MultiLayerNetwork reference = new MultiLayerNetwork(conf.clone());
    reference.init();
    MultiLayerNetwork worker = new MultiLayerNetwork(conf.clone());
    worker.init();
    assertEquals(reference.params(), worker.params(), "same seed, same initial parameters");

    PsToken token = PsToken.generate();
    String name = "ps-" + UUID.randomUUID();
    ParameterServer.Builder server = ParameterServer.builder().setShardIndex(0).setToken(token);
    try (ParameterServer ps = (workerUpdates ? server : server.optInProcess(name)).build().start();
         PsClient client = PsClient.builder().setShards(List.of(ps.address())).setToken(token)
             .optSparseTransfers(workerUpdates ? 1.0 : 0).optSameJvmTransfers(false).build()) {
      client.createGroup(workerUpdates ? ConsistencyGroup.async("net") : ConsistencyGroup.sync("net", 1));
      NetworkVariables variables = NetworkVariables.of(Net.of(worker), "net", workerUpdates);
      client.create(variables.specs());
      client.initializeAll();
      try (PsTrainingStep step = new PsTrainingStep(Net.of(worker), variables, client, workerUpdates)) {
        assertEquals(overlap, overlap && step.overlapTransfers("worker 0"), "every layer before the output is hooked");
        for (DataSet batch : data) {
          reference.fit(batch);
          step.step(batch);
        }
        assertEquals(data.size(), client.step(), "one step per minibatch");
        step.pull();
      }
      if (workerUpdates) {
        assertTrue(client.bulkWireBytes() > 0, "the shard's socket carried the transfers");
      }
    }
    double diff = worker.params().sub(reference.params()).amaxNumber().doubleValue();
    assertTrue(diff <= 1e-5, "max |sparkps - dl4j| = " + diff);
    MultiLayerNetwork initial = new MultiLayerNetwork(conf.clone());
    initial.init();
    assertTrue(worker.params().sub(initial.params()).amaxNumber().doubleValue() > 1e-3, "training moved the parameters");
  }

  @Test
  void mlpWithAdamAndL2_oneWorkerSync_equalsDl4jFit() {
    assertSameTraining(mlp(), batches(new long[] {8, 20}, 3, 1));
  }

  @Test
  void workerUpdates_sentAsSparsePairsOfEveryElement_equalDl4jFit() {
    assertSameTraining(mlp(80, 64), batches(new long[] {8, 80}, 3, 1), true, false); // 5,120 weights: sent as pairs
  }

  @Test
  void cnnWithBatchNorm_workerUpdates_equalDl4jFit() {
    assertSameTraining(cnnWithBatchNorm(), batches(new long[] {6, 1, 8, 8}, 3, 2), true, false);
  }

  @Test
  void cnnWithBatchNorm_oneWorkerSync_equalsDl4jFit() {
    assertSameTraining(cnnWithBatchNorm(), batches(new long[] {6, 1, 8, 8}, 3, 2));
  }

  @Test
  void threeLayers_transfersOverlappingThePasses_equalDl4jFit() {
    MultiLayerConfiguration conf = new NeuralNetConfiguration.Builder().seed(5).dataType(DataType.FLOAT)
        .updater(new Adam(0.01)).l2(1e-3).list()
        .layer(new DenseLayer.Builder().nIn(20).nOut(16).activation(Activation.RELU).build())
        .layer(new DenseLayer.Builder().nIn(16).nOut(12).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(12).nOut(3)
            .activation(Activation.SOFTMAX).build())
        .build();
    assertSameTraining(conf, batches(new long[] {8, 20}, 3, 4), false, true);
  }

  @Test
  void cnnWithBatchNorm_transfersOverlappingThePasses_equalDl4jFit() {
    assertSameTraining(cnnWithBatchNorm(), batches(new long[] {6, 1, 8, 8}, 3, 2), false, true);
  }

  @Test
  void computationGraph_oneWorkerSync_equalsDl4jFit() {
    assertSameGraphTraining(false);
  }

  @Test
  void computationGraph_transfersOverlappingThePasses_equalDl4jFit() {
    assertSameGraphTraining(true);
  }

  private static void assertSameGraphTraining(boolean overlap) {
    org.deeplearning4j.nn.conf.ComputationGraphConfiguration conf = new NeuralNetConfiguration.Builder().seed(21)
        .dataType(DataType.FLOAT).updater(new Adam(0.01)).l2(1e-3).graphBuilder().addInputs("in")
        .addLayer("a", new DenseLayer.Builder().nIn(20).nOut(12).activation(Activation.RELU).build(), "in")
        .addLayer("b", new DenseLayer.Builder().nIn(20).nOut(6).activation(Activation.TANH).build(), "in")
        .addVertex("ab", new org.deeplearning4j.nn.conf.graph.MergeVertex(), "a", "b")
        .addLayer("out", new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(18).nOut(3)
            .activation(Activation.SOFTMAX).build(), "ab")
        .setOutputs("out").build();
    ComputationGraph reference = new ComputationGraph(conf.clone());
    reference.init();
    ComputationGraph worker = new ComputationGraph(conf.clone());
    worker.init();
    PsToken token = PsToken.generate();
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token)
             .optInProcess("ps-" + UUID.randomUUID()).build().start();
         PsClient client = PsClient.builder().setShards(List.of(ps.address())).setToken(token).build()) {
      client.createGroup(ConsistencyGroup.sync("graph", 1));
      NetworkVariables variables = NetworkVariables.of(worker, "graph");
      assertTrue(variables.names().containsAll(List.of("a_W", "b_b", "out_W")), variables.names().toString());
      client.create(variables.specs());
      client.initializeAll();
      try (PsTrainingStep step = new PsTrainingStep(worker, variables, client)) {
        assertEquals(overlap, overlap && step.overlapTransfers("worker 0"), "the graph's layers are hooked");
        for (DataSet batch : batches(new long[] {8, 20}, 3, 3)) {
          reference.fit(batch);
          step.step(batch);
        }
        step.pull();
      }
    }
    double diff = worker.params().sub(reference.params()).amaxNumber().doubleValue();
    assertTrue(diff <= 1e-5, "max |sparkps - dl4j| = " + diff);
  }

  @Test
  void unsupportedUpdater_isNamedWithTheParameter() {
    MultiLayerConfiguration conf = new NeuralNetConfiguration.Builder().updater(new AdaDelta()).list()
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MSE).nIn(2).nOut(1)
            .activation(Activation.IDENTITY).build()).build();
    MultiLayerNetwork net = new MultiLayerNetwork(conf);
    net.init();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NetworkVariables.of(net, null));
    assertTrue(e.getMessage().contains("'0_W'") && e.getMessage().contains("AdaDelta"), e.getMessage());
  }
}
