package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.bulk.Bf16;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/** bfloat16 over the bulk port: exact rounding both ways, half the bytes, the shard's checks intact. */
class Bf16TransferTest {
  private static final int ROWS = 512;
  private static final int COLS = 1024; // 2 MiB per shard: over the bulk port
  private TestCluster cluster;
  private PsClient plain;
  private PsClient bf16;

  @BeforeEach
  void start() {
    cluster = TestCluster.netty(2);
    plain = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(false));
    bf16 = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(false).optBf16Transfers(true));
    plain.create(VariableSpec.builder().setName("w").setShape(2 * ROWS, COLS).optOptimizer(OptimizerConfig.sgd(1))
        .build());
    plain.initializeAll();
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static INDArray random(long seed) {
    Random r = new Random(seed);
    float[] v = new float[2 * ROWS * COLS];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(9) - 4));
    }
    return Nd4j.createFromArray(v).reshape(2 * ROWS, COLS);
  }

  private static float[] rounded(float[] v) {
    float[] out = new float[v.length];
    for (int i = 0; i < v.length; i++) {
      out[i] = Bf16.decode(Bf16.encode(v[i]));
    }
    return out;
  }

  @Test
  void encode_roundsToNearestEven_andKeepsNonFiniteValues() {
    assertEquals((short) 0x3f80, Bf16.encode(1f));
    assertEquals(1f, Bf16.decode(Bf16.encode(1f + 0x1p-8f)), "a tie rounds to the even neighbour (down)");
    assertEquals(1f + 0x1p-6f, Bf16.decode(Bf16.encode(1f + 3 * 0x1p-8f)), "a tie rounds to the even neighbour (up)");
    assertEquals(1f + 0x1p-7f, Bf16.decode(Bf16.encode(1f + 0x1p-7f + 0x1p-10f)), "below half: down");
    assertEquals(-2.5f, Bf16.decode(Bf16.encode(-2.5f)));
    assertTrue(Float.isNaN(Bf16.decode(Bf16.encode(Float.NaN))));
    assertEquals(Float.NEGATIVE_INFINITY, Bf16.decode(Bf16.encode(Float.NEGATIVE_INFINITY)));
    assertEquals(Float.POSITIVE_INFINITY, Bf16.decode(Bf16.encode(Float.MAX_VALUE)), "beyond bfloat16's range");
  }

  @Test
  void pull_readsEachValueRoundedToBf16_inHalfTheBytes() {
    INDArray values = random(1);
    plain.assign("w", values);
    INDArray exact = Nd4j.create(DataType.FLOAT, 2 * ROWS, COLS);
    INDArray halved = Nd4j.create(DataType.FLOAT, 2 * ROWS, COLS);
    long plainBefore = plain.bulkWireBytes();
    plain.pullInto(Map.of("w", exact));
    long plainBytes = plain.bulkWireBytes() - plainBefore;
    bf16.pullInto(Map.of("w", halved));
    long bf16Bytes = bf16.bulkWireBytes();
    float[] v = values.reshape(-1).toFloatVector();
    assertArrayEquals(v, exact.reshape(-1).toFloatVector(), "float32 pulls are exact");
    assertArrayEquals(rounded(v), halved.reshape(-1).toFloatVector(), "bf16 pulls are the values rounded");
    double ratio = (double) bf16Bytes / plainBytes;
    assertTrue(ratio > 0.49 && ratio < 0.51, "bf16 " + bf16Bytes + " bytes against float32 " + plainBytes);
    assertTrue(plainBytes >= 4L * 2 * ROWS * COLS, "float32 pull bytes " + plainBytes);
  }

  @Test
  void push_appliesTheGradientRoundedToBf16_inHalfTheBytes() {
    INDArray gradient = random(2);
    bf16.push(Map.of("w", gradient));
    long bf16Bytes = bf16.bulkWireBytes();
    INDArray after = Nd4j.create(DataType.FLOAT, 2 * ROWS, COLS);
    plain.pullInto(Map.of("w", after));
    float[] expected = rounded(gradient.reshape(-1).toFloatVector());
    for (int i = 0; i < expected.length; i++) {
      expected[i] = 0f - expected[i]; // SGD, lr 1, from zeros
    }
    assertArrayEquals(expected, after.reshape(-1).toFloatVector());
    long before = plain.bulkWireBytes();
    plain.push(Map.of("w", gradient));
    long plainBytes = plain.bulkWireBytes() - before;
    double ratio = (double) bf16Bytes / plainBytes;
    assertTrue(ratio > 0.49 && ratio < 0.51, "bf16 " + bf16Bytes + " bytes against float32 " + plainBytes);
  }

  @Test
  void aNonFiniteGradient_isStillRefusedByTheShard_andNothingIsApplied() {
    INDArray gradient = Nd4j.ones(DataType.FLOAT, 2 * ROWS, COLS);
    gradient.putScalar(new long[] {ROWS + 3, 7}, Float.POSITIVE_INFINITY);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bf16.push(Map.of("w", gradient)));
    assertTrue(e.getMessage().contains("Infinity"), e.getMessage());
    INDArray after = Nd4j.create(DataType.FLOAT, 2 * ROWS, COLS);
    plain.pullInto(Map.of("w", after));
    assertEquals(0.0, after.sumNumber().doubleValue(), 0.0, "no shard applied any of it");
  }
}
