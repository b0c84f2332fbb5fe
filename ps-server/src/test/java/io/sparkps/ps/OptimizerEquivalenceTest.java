package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.LearningRateSchedule;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.GradientUpdater;
import org.nd4j.linalg.learning.config.AdaGrad;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.learning.config.IUpdater;
import org.nd4j.linalg.learning.config.Nesterovs;
import org.nd4j.linalg.learning.config.NoOp;
import org.nd4j.linalg.learning.config.RmsProp;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.learning.regularization.L1Regularization;
import org.nd4j.linalg.learning.regularization.L2Regularization;
import org.nd4j.linalg.learning.regularization.Regularization;
import org.nd4j.linalg.learning.regularization.WeightDecay;
import org.nd4j.linalg.schedule.ExponentialSchedule;
import org.nd4j.linalg.schedule.ISchedule;
import org.nd4j.linalg.schedule.InverseSchedule;
import org.nd4j.linalg.schedule.MapSchedule;
import org.nd4j.linalg.schedule.PolySchedule;
import org.nd4j.linalg.schedule.ScheduleType;
import org.nd4j.linalg.schedule.SigmoidSchedule;
import org.nd4j.linalg.schedule.StepSchedule;

/**
 * The server's optimizers against ND4J's own updaters and DL4J's regularization classes: the
 * same gradient sequence must give the same parameters to 1e-6.
 */
class OptimizerEquivalenceTest {
  private static final int STEPS = 25;
  private static TestCluster cluster;
  private static PsClient client;
  private static int counter;

  @BeforeAll
  static void start() {
    cluster = TestCluster.inProcess(2);
    client = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSplitBytes(256));
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  static Stream<Arguments> optimizers() {
    ISchedule exp = new ExponentialSchedule(ScheduleType.ITERATION, 0.05, 0.9);
    return Stream.of(
        Arguments.of(OptimizerConfig.sgd(0.1), new Sgd(0.1), List.of()),
        Arguments.of(OptimizerConfig.nesterov(0.05, 0.9), new Nesterovs(0.05, 0.9), List.of()),
        Arguments.of(OptimizerConfig.adam(0.01), new Adam(0.01), List.of()),
        Arguments.of(OptimizerConfig.adam(0.02, 0.8, 0.99, 1e-6), new Adam(0.02, 0.8, 0.99, 1e-6), List.of()),
        Arguments.of(OptimizerConfig.adaGrad(0.1), new AdaGrad(0.1), List.of()),
        Arguments.of(OptimizerConfig.rmsProp(0.01), new RmsProp(0.01), List.of()),
        Arguments.of(OptimizerConfig.noOp(), new NoOp(), List.of()),
        Arguments.of(OptimizerConfig.sgd(0).withLearningRate(LearningRateSchedule.exponential(0.05, 0.9)),
            new Sgd(exp), List.of()),
        Arguments.of(OptimizerConfig.adam(0).withLearningRate(LearningRateSchedule.step(0.01, 0.5, 5)),
            Adam.builder().learningRateSchedule(new StepSchedule(ScheduleType.ITERATION, 0.01, 0.5, 5)).build(),
            List.of()),
        Arguments.of(OptimizerConfig.adaGrad(Double.NaN).withLearningRate(LearningRateSchedule.exponential(0.05, 0.9)),
            new AdaGrad(exp), List.of()),
        Arguments.of(OptimizerConfig.rmsProp(Double.NaN).withLearningRate(LearningRateSchedule.exponential(0.05, 0.9)),
            RmsProp.builder().learningRateSchedule(exp).build(), List.of()),
        Arguments.of(OptimizerConfig.adam(0.01).withL2(0.01).withL1(0.001),
            new Adam(0.01), List.of(new L1Regularization(0.001), new L2Regularization(0.01))),
        Arguments.of(OptimizerConfig.nesterov(0.05, 0.9).withWeightDecay(0.01, true),
            new Nesterovs(0.05, 0.9), List.of(new WeightDecay(0.01, true))),
        Arguments.of(OptimizerConfig.sgd(0.1).withWeightDecay(0.02, false),
            new Sgd(0.1), List.of(new WeightDecay(0.02, false))));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("optimizers")
  void serverOptimizer_matchesNd4jUpdater(OptimizerConfig ours, IUpdater theirs, List<Regularization> reg) {
    String name = "v" + (counter++);
    INDArray w0 = Nd4j.rand(DataType.FLOAT, 13, 7).subi(0.5);
    client.create(VariableSpec.builder().setName(name).setShape(13, 7).optOptimizer(ours)
        .optInitializer(Initializer.values(w0)).build());
    client.initialize(List.of(name));
    assertEquals(2, client.placement().slicesOf(name).size(), "the variable spans both shards");

    INDArray expected = w0.dup();
    long stateSize = theirs.stateSize(w0.length());
    GradientUpdater<?> updater = theirs.instantiate(
        stateSize == 0 ? null : Nd4j.zeros(DataType.FLOAT, 1, stateSize), true);
    Nd4j.getRandom().setSeed(7);
    for (int t = 0; t < STEPS; t++) {
      INDArray g = Nd4j.randn(DataType.FLOAT, 13, 7);
      client.push(Map.of(name, g));
      INDArray update = g.dup();
      double lr = theirs.getLearningRate(t, 0);
      for (Regularization r : reg) {
        if (r.applyStep() == Regularization.ApplyStep.BEFORE_UPDATER) {
          r.apply(expected, update, lr, t, 0);
        }
      }
      updater.applyUpdater(update, t, 0);
      for (Regularization r : reg) {
        if (r.applyStep() == Regularization.ApplyStep.POST_UPDATER) {
          r.apply(expected, update, lr, t, 0);
        }
      }
      expected.subi(update);
    }
    INDArray actual = client.pull(name);
    double maxDiff = actual.sub(expected).amaxNumber().doubleValue();
    assertTrue(maxDiff <= 1e-6, ours + ": max |server - nd4j| = " + maxDiff);
    assertTrue(actual.sub(w0).amaxNumber().doubleValue() > 1e-3, "the parameters moved");
  }

  /**
   * A table's AdaGrad rows follow ND4J's AdaGrad on each row (its default epsilon, its history
   * starting at epsilon), lazily: a row moves only on the steps that touch it. The gradients are
   * small, as a rare id's share of a minibatch's mean loss is, where the history's start matters.
   */
  @Test
  void embeddingRowsWithAdaGrad_followNd4jsAdaGradRowByRow() {
    EmbeddingTable table = client.embeddingTable(EmbeddingSpec.builder().setName("rows-adagrad").setDim(4)
        .optOptimizer("ADAGRAD", 0.1).optInit(0.5, 3).build());
    long[] ids = java.util.stream.LongStream.range(0, 10).toArray();
    table.pull(ids, 0);
    float[] start = table.read(ids);
    List<INDArray> expected = new ArrayList<>();
    List<GradientUpdater<?>> updaters = new ArrayList<>();
    for (int r = 0; r < ids.length; r++) {
      expected.add(Nd4j.createFromArray(java.util.Arrays.copyOfRange(start, r * 4, r * 4 + 4)).reshape(1, 4));
      updaters.add(new AdaGrad(0.1).instantiate(Nd4j.zeros(DataType.FLOAT, 1, 4), true));
    }
    int[] touches = new int[ids.length];
    java.util.Random random = new java.util.Random(5);
    for (int t = 1; t <= STEPS; t++) {
      List<Long> some = new ArrayList<>();
      for (long id : ids) {
        if (random.nextInt(3) == 0) {
          some.add(id);
        }
      }
      float[] g = new float[some.size() * 4];
      for (int i = 0; i < g.length; i++) {
        g[i] = (float) (random.nextGaussian() * 1e-3);
      }
      table.push(some.stream().mapToLong(Long::longValue).toArray(), g, t);
      for (int i = 0; i < some.size(); i++) {
        int r = some.get(i).intValue();
        INDArray update = Nd4j.createFromArray(java.util.Arrays.copyOfRange(g, i * 4, i * 4 + 4)).reshape(1, 4);
        updaters.get(r).applyUpdater(update, touches[r]++, 0);
        expected.get(r).subi(update);
      }
    }
    float[] actual = table.read(ids);
    double worst = 0;
    for (int r = 0; r < ids.length; r++) {
      for (int d = 0; d < 4; d++) {
        worst = Math.max(worst, Math.abs(actual[r * 4 + d] - expected.get(r).getFloat(0, d)));
      }
    }
    assertTrue(worst <= 1e-6, "max |table - nd4j| = " + worst);
    assertTrue(java.util.Arrays.stream(touches).allMatch(n -> n > 3), java.util.Arrays.toString(touches));
  }

  @Test
  void schedules_matchNd4jSchedules() {
    List<Object[]> pairs = new ArrayList<>();
    pairs.add(new Object[] {LearningRateSchedule.exponential(0.1, 0.95), new ExponentialSchedule(ScheduleType.ITERATION, 0.1, 0.95)});
    pairs.add(new Object[] {LearningRateSchedule.step(0.1, 0.5, 10), new StepSchedule(ScheduleType.ITERATION, 0.1, 0.5, 10)});
    pairs.add(new Object[] {LearningRateSchedule.inverse(0.1, 0.2, 0.75), new InverseSchedule(ScheduleType.ITERATION, 0.1, 0.2, 0.75)});
    pairs.add(new Object[] {LearningRateSchedule.poly(0.1, 2, 100), new PolySchedule(ScheduleType.ITERATION, 0.1, 2, 100)});
    pairs.add(new Object[] {LearningRateSchedule.sigmoid(0.1, 0.3, 20), new SigmoidSchedule(ScheduleType.ITERATION, 0.1, 0.3, 20)});
    pairs.add(new Object[] {LearningRateSchedule.map(Map.of(0L, 0.1, 10L, 0.05, 30L, 0.01)),
        new MapSchedule(ScheduleType.ITERATION, Map.of(0, 0.1, 10, 0.05, 30, 0.01))});
    for (Object[] p : pairs) {
      LearningRateSchedule ours = (LearningRateSchedule) p[0];
      ISchedule theirs = (ISchedule) p[1];
      for (int i = 0; i < 60; i++) {
        assertEquals(theirs.valueAt(i, 0), ours.valueAt(i), 1e-12, ours.kind() + " at iteration " + i);
      }
    }
  }
}
