package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * One push and one pull of several variables of odd sizes, one split over both shards: each shard
 * gets a frame of several parts, copied in chunks that straddle the parts' ends (64 Ki floats
 * through memory). Every element arrives exactly, over the socket and through memory.
 */
class MultiPartTransferTest {
  private static final Map<String, long[]> SHAPES = new LinkedHashMap<>();

  static {
    SHAPES.put("big", new long[] {1001, 301}); // 301,301 floats: split over the 2 shards (256 KiB and up)
    SHAPES.put("tiny", new long[] {5});
    SHAPES.put("odd", new long[] {70_001});
    SHAPES.put("mid", new long[] {3, 30_011});
  }

  /** A gradient whose every element differs: element i of variable v is (v + 1) * 1e-3 + i % 9973. */
  private static INDArray gradient(int v, long[] shape) {
    INDArray g = Nd4j.create(DataType.FLOAT, shape);
    long n = g.length();
    java.nio.FloatBuffer view = g.data().asNio().order(java.nio.ByteOrder.nativeOrder()).asFloatBuffer();
    for (int i = 0; i < n; i++) {
      view.put(i, (v + 1) * 1e-3f + i % 9973);
    }
    return g;
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"tcp", "same-jvm"})
  void severalVariablesInOneFrame_arriveExactly(String transport) {
    try (TestCluster cluster = TestCluster.netty(2, transport); PsClient c = cluster.client(0)) {
      Map<String, INDArray> gradients = new LinkedHashMap<>();
      int v = 0;
      for (Map.Entry<String, long[]> e : SHAPES.entrySet()) {
        c.create(VariableSpec.builder().setName(e.getKey()).setShape(e.getValue()).optOptimizer(OptimizerConfig.sgd(1))
            .optInitializer(Initializer.zeros()).build());
        gradients.put(e.getKey(), gradient(v++, e.getValue()));
      }
      c.initializeAll();
      assertEquals(transport, GrpcPsClient.of(c).bulkTransport(0));
      c.push(gradients); // SGD with rate 1 from zeros: every value is -gradient
      c.push(gradients);
      Map<String, INDArray> pulled = new LinkedHashMap<>();
      SHAPES.forEach((name, shape) -> pulled.put(name, Nd4j.create(DataType.FLOAT, shape)));
      c.pullInto(pulled);
      gradients.forEach((name, g) -> {
        INDArray expected = g.mul(-2);
        assertEquals(expected, pulled.get(name), name + " over " + transport);
        assertEquals(expected, c.pull(name), name + " read back whole over " + transport);
      });
    }
  }
}
