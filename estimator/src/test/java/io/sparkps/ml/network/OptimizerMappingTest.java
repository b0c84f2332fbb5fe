package io.sparkps.ml.network;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.training.PsTrainingStepTest;
import io.sparkps.ps.spec.OptimizerConfig;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.learning.config.AdaGrad;
import org.nd4j.linalg.learning.config.AdaMax;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.learning.config.RmsProp;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.L1Regularization;
import org.nd4j.linalg.learning.regularization.L2Regularization;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.linalg.learning.regularization.WeightDecay;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import org.nd4j.linalg.schedule.CycleSchedule;
import org.nd4j.linalg.schedule.ExponentialSchedule;
import org.nd4j.linalg.schedule.InverseSchedule;
import org.nd4j.linalg.schedule.MapSchedule;
import org.nd4j.linalg.schedule.PolySchedule;
import org.nd4j.linalg.schedule.ScheduleType;
import org.nd4j.linalg.schedule.SigmoidSchedule;
import org.nd4j.linalg.schedule.StepSchedule;

/**
 * Every DL4J updater, learning-rate schedule and regularization SparkPS maps to the shards'
 * optimizers trains as {@code MultiLayerNetwork.fit} does, to 1e-5 (one SYNC worker, 12 steps);
 * the ones it does not map are refused naming the parameter and what to change.
 */
class OptimizerMappingTest {
  private static MultiLayerConfiguration mlp(IUpdater updater, UnaryOperator<NeuralNetConfiguration.Builder> reg) {
    return reg.apply(new NeuralNetConfiguration.Builder().seed(12).dataType(DataType.FLOAT).updater(updater)).list()
        .layer(new DenseLayer.Builder().nIn(20).nOut(16).activation(Activation.RELU).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(16).nOut(3)
            .activation(Activation.SOFTMAX).build())
        .build();
  }

  /**
   * Every mapped updater, schedule and regularization. Weight decay: DL4J 1.0.0-M2.1 lists the
   * builder's weight decay twice for each weight and applies it twice, so SparkPS must add both up
   * to train alike (applied once, Sgd was 9.2e-4 off after 12 steps).
   */
  static Stream<Arguments> supported() {
    ScheduleType it = ScheduleType.ITERATION;
    UnaryOperator<NeuralNetConfiguration.Builder> none = b -> b;
    return Stream.of(
        Arguments.of("Sgd + L1", new Sgd(0.1), (UnaryOperator<NeuralNetConfiguration.Builder>) b -> b.l1(1e-3)),
        Arguments.of("AdaGrad", new AdaGrad(0.05), none),
        Arguments.of("RmsProp", new RmsProp(0.01), none),
        Arguments.of("Nesterovs + L2", new Nesterovs(0.05, 0.9), (UnaryOperator<NeuralNetConfiguration.Builder>) b -> b.l2(1e-3)),
        Arguments.of("Sgd, exponential schedule", new Sgd(new ExponentialSchedule(it, 0.1, 0.9)), none),
        Arguments.of("Sgd, step schedule", new Sgd(new StepSchedule(it, 0.1, 0.5, 3)), none),
        Arguments.of("Sgd, inverse schedule", new Sgd(new InverseSchedule(it, 0.1, 0.5, 2)), none),
        Arguments.of("Sgd, poly schedule", new Sgd(new PolySchedule(it, 0.1, 2, 20)), none),
        Arguments.of("Sgd, sigmoid schedule", new Sgd(new SigmoidSchedule(it, 0.1, 0.5, 5)), none),
        Arguments.of("Sgd, map schedule", new Sgd(new MapSchedule(it, Map.of(0, 0.1, 4, 0.05, 9, 0.2))), none),
        Arguments.of("Adam, exponential schedule", new Adam(new ExponentialSchedule(it, 0.01, 0.8)), none),
        Arguments.of("Nesterovs, step schedule", new Nesterovs(new StepSchedule(it, 0.05, 0.5, 4), 0.9), none),
        Arguments.of("Sgd + weight decay", new Sgd(0.1), (UnaryOperator<NeuralNetConfiguration.Builder>) b -> b.weightDecay(1e-3)),
        Arguments.of("Adam + weight decay", new Adam(0.01), (UnaryOperator<NeuralNetConfiguration.Builder>) b -> b.weightDecay(1e-3)),
        Arguments.of("Sgd + weight decay, no lr", new Sgd(0.1), (UnaryOperator<NeuralNetConfiguration.Builder>) b -> b.weightDecay(1e-3, false)),
        Arguments.of("RmsProp, inverse schedule", RmsProp.builder().learningRateSchedule(new InverseSchedule(it, 0.01, 0.3, 1.5)).build(),
            none));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("supported")
  void supportedUpdater_trainsAsDl4jFit(String name, IUpdater updater, UnaryOperator<NeuralNetConfiguration.Builder> reg) {
    PsTrainingStepTest.assertSameTraining(mlp(updater, reg), PsTrainingStepTest.batches(new long[] {8, 20}, 3, 5));
  }

  static Stream<Arguments> unsupported() {
    return Stream.of(
        Arguments.of(new AdaMax(0.01), "the updater AdaMax"),
        Arguments.of(new Sgd(new ExponentialSchedule(ScheduleType.EPOCH, 0.1, 0.9)),
            "a learning-rate schedule by EPOCH (use ScheduleType.ITERATION)"),
        Arguments.of(new Sgd(new CycleSchedule(ScheduleType.ITERATION, 0.1, 100)),
            "the learning-rate schedule CycleSchedule"),
        Arguments.of(new Nesterovs(0.1, new StepSchedule(ScheduleType.ITERATION, 0.9, 0.5, 10)), "a momentum schedule"),
        // DL4J's AdaGrad.clone() drops the schedule: the layer is left with a NaN rate, which fit trains to NaN.
        Arguments.of(new AdaGrad(new ExponentialSchedule(ScheduleType.ITERATION, 0.05, 0.9)),
            "the learning rate NaN and no learning-rate schedule in its AdaGrad"));
  }

  @Test
  void weightDecay_withAndWithoutTheLearningRate_isRefused_whileRepeatsAddUp() {
    List<Regularization> mixed = List.of(new WeightDecay(1e-3, true), new WeightDecay(1e-3, false));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> OptimizerMapping.of("0_W", new Sgd(0.1), mixed));
    assertTrue(e.getMessage().contains("'0_W'") && e.getMessage().contains("weight decay both with and without"),
        e.getMessage());
    OptimizerConfig twice = OptimizerMapping.of("0_W", new Sgd(0.1), List.of(new WeightDecay(1e-3, false),
        new WeightDecay(2e-3, false), new L2Regularization(1e-4), new L2Regularization(3e-4), new L1Regularization(5e-4)));
    assertEquals(3e-3, twice.weightDecay(), 1e-12);
    assertEquals(4e-4, twice.l2(), 1e-12);
    assertEquals(5e-4, twice.l1(), 1e-12);
  }

  @ParameterizedTest(name = "{1}")
  @MethodSource("unsupported")
  void unsupported_isRefusedNamingTheParameterAndWhat(IUpdater updater, String what) {
    MultiLayerNetwork net = new MultiLayerNetwork(mlp(updater, b -> b));
    net.init();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NetworkVariables.of(net, null));
    assertTrue(e.getMessage().contains("'0_W'") && e.getMessage().contains(what), e.getMessage());
  }
}
