package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.StatusRuntimeException;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.WireEncoding;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Sparse transfers with error feedback: the largest elements go, the rest wait and are not lost,
 * in about 8 bytes per element sent, over the socket and through memory alike.
 */
class SparseTransferTest {
  private static final int ROWS = 64;
  private static final int COLS = 128; // 8,192 elements: two slices of 4,096 on 2 shards
  private static final int N = ROWS * COLS;
  private static final double DENSITY = 0.05;
  private static final int PER_SLICE = (int) Math.ceil(DENSITY * N / 2); // 205
  private TestCluster cluster;
  private PsClient plain;
  private PsClient sparse;

  private void start(boolean sameJvm) {
    cluster = TestCluster.netty(2, sameJvm);
    plain = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(false).optSplitBytes(4 * N / 2));
    sparse = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(sameJvm).optSparseTransfers(DENSITY).optWorker(1).optSplitBytes(4 * N / 2));
    plain.create(VariableSpec.builder().setName("w").setShape(ROWS, COLS).optOptimizer(OptimizerConfig.sgd(1)).build());
    plain.create(VariableSpec.builder().setName("b").setShape(1, 100).optOptimizer(OptimizerConfig.sgd(1)).build());
    plain.initializeAll();
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static float[] gaussian(long seed, double scale) {
    Random r = new Random(seed);
    float[] v = new float[N];
    for (int i = 0; i < v.length; i++) {
      v[i] = (float) (r.nextGaussian() * scale);
    }
    return v;
  }

  private float[] values(String name) {
    return plain.pull(name).reshape(-1).toFloatVector();
  }

  /** The indices of the {@code k} largest magnitudes of {@code v[from .. from+n)}, ascending. */
  private static int[] largest(float[] v, int from, int n, int k) {
    Integer[] order = new Integer[n];
    for (int i = 0; i < n; i++) {
      order[i] = from + i;
    }
    Arrays.sort(order, (a, b) -> Float.compare(Math.abs(v[b]), Math.abs(v[a])));
    return Arrays.stream(order, 0, k).mapToInt(Integer::intValue).sorted().toArray();
  }

  @ParameterizedTest(name = "same JVM: {0}")
  @ValueSource(booleans = {false, true})
  void push_sendsTheLargestElements_andTheRestLater_noneLost(boolean sameJvm) {
    start(sameJvm);
    float[] g = gaussian(1, 1.0);
    float[] bias = new float[100];
    Arrays.fill(bias, 0.5f);
    sparse.push(Map.of("w", Nd4j.createFromArray(g).reshape(ROWS, COLS), "b", Nd4j.createFromArray(bias).reshape(1, 100)));
    float[] after = values("w");
    float[] expected = new float[N];
    for (int half = 0; half < 2; half++) {
      for (int i : largest(g, half * N / 2, N / 2, PER_SLICE)) {
        expected[i] = -g[i]; // SGD with rate 1, from zeros: each picked element exactly, nothing else
      }
    }
    assertArrayEquals(expected, after, "each slice applied exactly its " + PER_SLICE + " largest elements");
    INDArray whole = plain.pull("w");
    sparse.subtractUnsent(Map.of("w", whole));
    float[] negated = new float[N];
    for (int i = 0; i < N; i++) {
      negated[i] = -g[i];
    }
    assertArrayEquals(negated, whole.reshape(-1).toFloatVector(), "the shard's values less what waits: all of the push");
    float[] b = values("b");
    assertEquals(-0.5f, b[0]);
    assertEquals(-0.5f, b[99], "a small variable travels dense");

    if (!sameJvm) {
      long bytes = sparse.bulkWireBytes();
      long pairs = 8L * 2 * PER_SLICE;
      assertTrue(bytes >= pairs && bytes < pairs + 2000, "sparse push of " + bytes + " bytes for " + pairs
          + " bytes of pairs (dense: " + 4 * N + ")");
    }
    // Zero gradients from now on: the residual drains, largest first, until all of g arrived.
    INDArray zeros = Nd4j.zeros(DataType.FLOAT, ROWS, COLS);
    for (int step = 1; step < 20; step++) {
      sparse.push(Map.of("w", zeros));
    }
    float[] drained = values("w");
    for (int i = 0; i < N; i++) {
      assertEquals(-g[i], drained[i], 0f, "element " + i + " arrived whole after 20 pushes of " + PER_SLICE);
    }
  }

  @ParameterizedTest(name = "same JVM: {0}")
  @ValueSource(booleans = {false, true})
  void pullInto_sameArrays_receivesWhatMovedMost_andCatchesUp(boolean sameJvm) {
    start(sameJvm);
    float[] v1 = gaussian(2, 1.0);
    plain.assign("w", Nd4j.createFromArray(v1).reshape(ROWS, COLS));
    INDArray held = Nd4j.create(DataType.FLOAT, ROWS, COLS);
    sparse.pullInto(Map.of("w", held));
    assertArrayEquals(v1, held.reshape(-1).toFloatVector(), "the first pull is whole");

    float[] delta = gaussian(3, 0.01);
    float[] v2 = v1.clone();
    for (int i = 0; i < N; i++) {
      v2[i] += delta[i];
    }
    plain.assign("w", Nd4j.createFromArray(v2).reshape(ROWS, COLS));
    long before = sparse.bulkWireBytes();
    sparse.pullInto(Map.of("w", held));
    long bytes = sparse.bulkWireBytes() - before;
    float[] got = held.reshape(-1).toFloatVector();
    float[] expected = v1.clone();
    for (int half = 0; half < 2; half++) {
      int from = half * N / 2;
      float[] moved = new float[N];
      for (int i = 0; i < N; i++) {
        moved[i] = v2[i] - v1[i];
      }
      for (int i : largest(moved, from, N / 2, PER_SLICE)) {
        expected[i] = v2[i];
      }
    }
    assertArrayEquals(expected, got, "the elements that moved most took their new values, the rest kept theirs");
    if (!sameJvm) {
      long pairs = 8L * 2 * PER_SLICE;
      assertTrue(bytes >= pairs && bytes < pairs + 2000, "sparse pull of " + bytes + " bytes for " + pairs);
    }
    for (int pull = 1; pull < 20; pull++) {
      sparse.pullInto(Map.of("w", held));
    }
    assertArrayEquals(v2, held.reshape(-1).toFloatVector(), "what waited arrived");

    INDArray elsewhere = Nd4j.create(DataType.FLOAT, ROWS, COLS);
    plain.assign("w", Nd4j.createFromArray(v1).reshape(ROWS, COLS));
    sparse.pullInto(Map.of("w", elsewhere));
    assertArrayEquals(v1, elsewhere.reshape(-1).toFloatVector(), "another array is filled whole");
    assertArrayEquals(v1, sparse.pull("w").reshape(-1).toFloatVector(), "pull() is exact");
  }

  @Test
  void aNonFiniteGradient_isRefusedBeforeAnythingIsPickedOrSent() {
    start(false);
    float[] g = gaussian(4, 1.0);
    g[N - 5] = Float.NaN;
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> sparse.push(Map.of("w", Nd4j.createFromArray(g).reshape(ROWS, COLS))));
    assertTrue(e.getMessage().contains("NaN at element " + (N - 5)), e.getMessage());
    assertEquals(0, sparse.bulkWireBytes(), "nothing was sent");
    sparse.push(Map.of("w", Nd4j.zeros(DataType.FLOAT, ROWS, COLS)));
    float[] after = values("w");
    assertArrayEquals(new float[N], after, "and nothing of it waits in the residual");
  }

  @Test
  void malformedSparseUpdates_areRefusedByTheShard_namingTheField() throws Exception {
    start(false);
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try (BulkClient raw = new BulkClient("127.0.0.1", cluster.servers.get(0).bulkPort(), cluster.token, null,
        Duration.ofSeconds(5), timer)) {
      FrameHeader.Builder h = FrameHeader.newBuilder().setOp(UpdateOp.GRADIENT).setEncoding(WireEncoding.SPARSE);
      for (int[] indices : new int[][] {{7, 3}, {3, 3}, {4096, 5}, {-1, 2}}) {
        ByteBuffer pairs = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putInt(indices[0]).putInt(indices[1])
            .putFloat(1f).putFloat(2f).flip();
        FrameHeader header = h.clone().addSegments(Segment.newBuilder().setName("w").setOffset(0).setCount(4096)
            .setNonzeros(2)).build();
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> raw.update(header, List.of(pairs)));
        assertTrue(e.getMessage().contains("is not ascending within 0..4095 (field nonzeros)"), e.getMessage());
      }
      FrameHeader tooMany = h.clone().addSegments(Segment.newBuilder().setName("w").setOffset(0).setCount(4)
          .setNonzeros(5)).build();
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> raw.update(tooMany, List.of(ByteBuffer.allocate(40))));
      assertTrue(e.getMessage().contains("(fields nonzeros, count)"), e.getMessage());
      FrameHeader shortPayload = h.clone().addSegments(Segment.newBuilder().setName("w").setOffset(0).setCount(4096)
          .setNonzeros(3)).build();
      e = assertThrows(StatusRuntimeException.class, () -> raw.update(shortPayload, List.of(ByteBuffer.allocate(16))));
      assertTrue(e.getMessage().contains("describe 24 bytes"), e.getMessage());
    } finally {
      timer.shutdownNow();
    }
    assertArrayEquals(new float[N], values("w"), "nothing was applied");
  }

  @Test
  void sparseAndBf16_orADensityOutsideZeroToOne_areRefusedByName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> PsClient.builder().optSparseTransfers(1.5));
    assertTrue(e.getMessage().startsWith("sparse transfer density 1.5 is not within [0, 1]"), e.getMessage());
    TestCluster c = TestCluster.netty(1);
    try {
      e = assertThrows(IllegalArgumentException.class, () -> PsClient.builder().setShards(c.addresses())
          .setToken(c.token).optSparseTransfers(0.1).optBf16Transfers(true).build());
      assertTrue(e.getMessage().startsWith("bf16 and sparse transfers are exclusive"), e.getMessage());
    } finally {
      c.close();
    }
  }
}
