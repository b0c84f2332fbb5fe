package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.InitializerSpec;
import io.sparkps.ps.grpc.proto.Segment;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.wire.Payload;
import io.sparkps.ps.wire.ProtoConvert;
import io.sparkps.ps.wire.PsError;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Updates crafted past the client (as a buggy or hostile peer would send them) are refused by the
 * shard before anything is written: offsets whose sum with the count overflows, negative counts.
 */
class UpdateBoundsTest {
  private ScheduledExecutorService timer;
  private ShardStore store;
  private Updates updates;

  @BeforeEach
  void start() {
    timer = Executors.newSingleThreadScheduledExecutor();
    store = new ShardStore(0, new Waiters(timer, Runnable::run));
    updates = new Updates(store);
    // Rows [2, 4) of a 4 x 4 variable live here: elements [8, 16).
    store.create(CreateRequest.newBuilder().addSlices(SliceDecl.newBuilder().setRowStart(2).setRowEnd(4)
        .setSpec(VariableSpecProto.newBuilder().setName("w").addShape(4).addShape(4).setPinnedShard(-1)
            .setGroup(ConsistencyGroup.DEFAULT_NAME).setInitializer(InitializerSpec.newBuilder()
                .setKind(InitializerKind.CONSTANT).setA(1))
            .setOptimizer(io.sparkps.ps.wire.ProtoConvert.toProto(io.sparkps.ps.spec.OptimizerConfig.sgd(0.1))))).build());
    updates.apply(List.of(frame(UpdateOp.INITIALIZE, 8, 0)));
  }

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  private static Payload frame(UpdateOp op, long offset, long count) {
    FrameHeader h = FrameHeader.newBuilder().setOp(op).addSegments(Segment.newBuilder().setName("w").setOffset(offset)
        .setCount(count)).build();
    float[] data = new float[8];
    java.util.Arrays.fill(data, 7f);
    return new Payload(h, data, (int) Math.max(0, count), -1);
  }

  private float[] values() {
    return store.slice("w").values.clone();
  }

  @Test
  void anOffsetThatOverflowsWithItsCount_isRefused_andNothingIsWritten() {
    float[] before = values();
    PsError e = assertThrows(PsError.class, () -> updates.apply(List.of(frame(UpdateOp.ASSIGN, Long.MAX_VALUE - 3, 4))));
    assertTrue(e.getMessage().contains("outside the slice [8, 16)"), e.getMessage());
    assertArrayEquals(before, values());
  }

  @Test
  void aNegativeCountOrOffset_isRefused_andNothingIsWritten() {
    float[] before = values();
    PsError count = assertThrows(PsError.class, () -> updates.apply(List.of(frame(UpdateOp.ASSIGN, 8, -4))));
    assertTrue(count.getMessage().contains("claims -4 values"), count.getMessage());
    PsError offset = assertThrows(PsError.class, () -> updates.apply(List.of(frame(UpdateOp.ASSIGN, -8, 4))));
    assertTrue(offset.getMessage().contains("at element -8"), offset.getMessage());
    assertArrayEquals(before, values());
  }
}
