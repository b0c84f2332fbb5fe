package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** ASYNC and SSP gradients applied at the learning rate over 1 + their staleness, split variables included. */
class StalenessAwareRateTest {
  private TestCluster cluster;

  @BeforeEach
  void start() {
    cluster = TestCluster.inProcess(2);
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private PsClient worker(int index) {
    return cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optWorker(index).optSplitBytes(16).optWaitTimeout(Duration.ofSeconds(30)));
  }

  private static INDArray ones() {
    return Nd4j.ones(DataType.FLOAT, 4, 2);
  }

  /** Two workers read version 0; B pushes (fresh), then A (1 update stale), then A again after a pull (fresh). */
  private float[] interleaved(ConsistencyGroup group) {
    PsClient a = worker(0);
    PsClient b = worker(1);
    a.createGroup(group);
    // 4 x 2 floats with 16-byte splits: the variable lies in slices on both shards
    a.create(VariableSpec.builder().setName("w").setShape(4, 2).optGroup(group.name())
        .optOptimizer(OptimizerConfig.sgd(1)).build());
    a.initializeAll();
    INDArray seenByA = Nd4j.create(DataType.FLOAT, 4, 2);
    INDArray seenByB = Nd4j.create(DataType.FLOAT, 4, 2);
    a.pullInto(Map.of("w", seenByA));
    b.pullInto(Map.of("w", seenByB));
    b.push(Map.of("w", ones()));            // tau 0: w = -1
    a.push(Map.of("w", ones()));            // computed at version 0, the slices are at 1: tau 1
    a.pullInto(Map.of("w", seenByA));
    a.push(Map.of("w", ones()));            // fresh again: tau 0
    return a.pull("w", 0, 4).reshape(8).toFloatVector();
  }

  @Test
  void asyncGradientOneUpdateStale_isAppliedAtHalfTheRate_onEverySlice() {
    float[] w = interleaved(ConsistencyGroup.async("a").withStalenessAwareRate());
    float[] expected = new float[8];
    java.util.Arrays.fill(expected, -1f - 0.5f - 1f);
    assertArrayEquals(expected, w, 1e-6f);
  }

  @Test
  void withoutTheOption_everyGradientTakesTheFullRate() {
    float[] w = interleaved(ConsistencyGroup.async("a"));
    float[] expected = new float[8];
    java.util.Arrays.fill(expected, -3f);
    assertArrayEquals(expected, w, 1e-6f);
  }

  @Test
  void sspGradients_areScaledToo() {
    float[] w = interleaved(ConsistencyGroup.ssp("s", 2, 4).withStalenessAwareRate());
    float[] expected = new float[8];
    java.util.Arrays.fill(expected, -2.5f);
    assertArrayEquals(expected, w, 1e-6f);
  }

  @Test
  void aGradientThatNamesNoRead_takesTheFullRate() {
    PsClient a = worker(0);
    a.createGroup(ConsistencyGroup.async("a").withStalenessAwareRate());
    a.create(VariableSpec.builder().setName("w").setShape(4, 2).optGroup("a").optOptimizer(OptimizerConfig.sgd(1))
        .build());
    a.initializeAll();
    a.push(Map.of("w", ones())); // never pulled: nothing says how stale it is
    a.push(Map.of("w", ones()));
    float[] expected = new float[8];
    java.util.Arrays.fill(expected, -2f);
    assertArrayEquals(expected, a.pull("w", 0, 4).reshape(8).toFloatVector(), 1e-6f);
  }

  @Test
  void aSyncGroup_refusesTheOption_sayingWhy() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ConsistencyGroup.sync("s", 2).withStalenessAwareRate());
    assertTrue(e.getMessage().contains("ASYNC and SSP"), e.getMessage());
  }
}
