package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Bad updates of a variable split over two shards: refused whole, naming what is wrong, with
 * both slices unchanged; first as the client sends them, then crafted past the client so that
 * the shard's own checks are what refuses them.
 */
class BadUpdatesTest {
  private TestCluster cluster;
  private PsClient client;
  private ScheduledExecutorService timer;

  @BeforeEach
  void start() {
    cluster = TestCluster.netty(2);
    client = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSplitBytes(64));
    client.create(VariableSpec.builder().setName("w").setShape(10, 4).optInitializer(Initializer.constant(1))
        .optOptimizer(OptimizerConfig.sgd(1)).build());
    client.initializeAll();
    assertEquals(List.of(0, 1), client.placement().slicesOf("w").stream().map(Placement.Slice::shard).toList());
    timer = Executors.newSingleThreadScheduledExecutor();
  }

  @AfterEach
  void stop() {
    timer.shutdownNow();
    cluster.close();
  }

  private void assertUnchanged() {
    float[] ones = new float[40];
    java.util.Arrays.fill(ones, 1f);
    assertArrayEquals(ones, client.pull("w").reshape(-1).toFloatVector(), "both slices unchanged");
    assertEquals(0, client.read("w").version());
  }

  @Test
  void aNonFiniteValueInShard1sSliceOnly_reachesNeitherShard() {
    for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
      INDArray g = Nd4j.ones(DataType.FLOAT, 10, 4);
      g.putScalar(new long[] {7, 1}, bad); // element 29: in shard 1's rows 5..9
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> client.push(Map.of("w", g)));
      assertTrue(e.getMessage().contains("'w'") && e.getMessage().contains(bad + " at element 29"), e.getMessage());
      assertUnchanged();
    }
  }

  @Test
  void aPushToAnUnknownVariable_isRefusedNamingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> client.push(Map.of("nope", Nd4j.ones(DataType.FLOAT, 2))));
    assertTrue(e.getMessage().contains("'nope'"), e.getMessage());
    assertUnchanged();
  }

  /** Sends one update to shard 1's bulk port as crafted, past every check of the client. */
  private StatusRuntimeException refusedByShard1(Segment segment, float... payload) {
    ByteBuffer bytes = ByteBuffer.allocate(4 * payload.length).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : payload) {
      bytes.putFloat(f);
    }
    FrameHeader header = FrameHeader.newBuilder().setOp(UpdateOp.GRADIENT).addSegments(segment).build();
    try (BulkClient raw = new BulkClient("127.0.0.1", cluster.servers.get(1).bulkPort(), cluster.token, null,
        Duration.ofSeconds(5), timer)) {
      return assertThrows(StatusRuntimeException.class, () -> raw.update(header, List.of(bytes.flip())));
    }
  }

  @Test
  void malformedUpdatesPastTheClient_areRefusedByTheShard_namingTheField() {
    Segment.Builder w = Segment.newBuilder().setName("w");
    // shard 1 holds elements [20, 40)
    StatusRuntimeException e = refusedByShard1(w.clone().setOffset(0).setCount(4).build(), 1, 2, 3, 4);
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    assertTrue(e.getMessage().contains("elements [0, 4) are outside the slice [20, 40)"), e.getMessage());
    e = refusedByShard1(w.clone().setOffset(38).setCount(4).build(), 1, 2, 3, 4);
    assertTrue(e.getMessage().contains("elements [38, 42) are outside the slice [20, 40)"), e.getMessage());
    e = refusedByShard1(w.clone().setOffset(20).setCount(8).build(), 1, 2, 3, 4);
    assertTrue(e.getMessage().contains("claims 8 values at element 20 but its frame holds 4 more"), e.getMessage());
    e = refusedByShard1(w.clone().setOffset(20).setCount(2).build(), 1, 2, 3, 4);
    assertTrue(e.getMessage().contains("frame carries 4 floats but its segments describe 2"), e.getMessage());
    e = refusedByShard1(w.clone().setOffset(24).setCount(4).build(), 1, Float.NaN, 3, 4);
    assertTrue(e.getMessage().contains("has NaN at element 25"), e.getMessage());
    e = refusedByShard1(Segment.newBuilder().setName("nope").setOffset(0).setCount(1).build(), 1);
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
    assertTrue(e.getMessage().contains("unknown variable 'nope' on ps 1"), e.getMessage());
    assertUnchanged();
  }

  private StatusRuntimeException readRefusedByShard1(PullItem item) {
    try (BulkClient raw = new BulkClient("127.0.0.1", cluster.servers.get(1).bulkPort(), cluster.token, null,
        Duration.ofSeconds(5), timer)) {
      return assertThrows(StatusRuntimeException.class, () -> raw.read(PullRequest.newBuilder().addItems(item).build(),
          seg -> ByteBuffer.allocate(4 * (int) seg.getCount())));
    }
  }

  @Test
  void malformedReadsPastTheClient_areRefusedByTheShard_namingTheField() {
    // shard 1 holds rows [5, 10) of w
    PullItem.Builder w = PullItem.newBuilder().setName("w");
    for (long[] rows : new long[][] {{3, 7}, {5, 11}, {7, 7}, {8, 6}}) {
      StatusRuntimeException e = readRefusedByShard1(w.clone().setRowStart(rows[0]).setRowEnd(rows[1]).build());
      assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
      assertTrue(e.getMessage().contains("rows [" + rows[0] + ", " + rows[1] + ") are not within the rows [5, 10) held "
          + "here (fields row_start, row_end)"), e.getMessage());
    }
    for (long row : new long[] {4, 10, -1}) {
      StatusRuntimeException e = readRefusedByShard1(w.clone().addRows(row).build());
      assertTrue(e.getMessage().contains("row " + row + " is outside rows [5, 10) (field rows)"), e.getMessage());
    }
    try (BulkClient raw = new BulkClient("127.0.0.1", cluster.servers.get(1).bulkPort(), cluster.token, null,
        Duration.ofSeconds(5), timer)) {
      ByteBuffer edges = ByteBuffer.allocate(4 * 8).order(ByteOrder.LITTLE_ENDIAN);
      raw.read(PullRequest.newBuilder().addItems(w.clone().addRows(5).addRows(9)).build(), seg -> edges);
      ByteBuffer all = ByteBuffer.allocate(4 * 20).order(ByteOrder.LITTLE_ENDIAN);
      raw.read(PullRequest.newBuilder().addItems(w.clone().setRowStart(5).setRowEnd(10)).build(), seg -> all);
      for (ByteBuffer b : List.of(edges.flip(), all.flip())) {
        while (b.hasRemaining()) {
          assertEquals(1f, b.getFloat(), "the edge rows are served");
        }
      }
    }
  }
}
