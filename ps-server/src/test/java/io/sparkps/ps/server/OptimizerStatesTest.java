package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.InitializerSpec;
import io.sparkps.ps.grpc.proto.OptimizerState;
import io.sparkps.ps.grpc.proto.OptimizerStateRequest;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.wire.PackedArrays;
import io.sparkps.ps.wire.ProtoConvert;
import io.sparkps.ps.wire.PsError;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A slice's optimizer state read out and restored into a replacement's slice before its values: a
 * range at a time, only while the slice is not initialized, and bad requests refused by name
 * before anything is written.
 */
class OptimizerStatesTest {
  private ScheduledExecutorService timer;
  private ShardStore store;
  private OptimizerStates states;

  @BeforeEach
  void start() {
    timer = Executors.newSingleThreadScheduledExecutor();
    store = new ShardStore(0, new Waiters(timer, Runnable::run));
    states = new OptimizerStates(store);
    // Rows [2, 4) of a 4 x 4 variable with Adam live here: elements [8, 16).
    store.create(CreateRequest.newBuilder().addSlices(SliceDecl.newBuilder().setRowStart(2).setRowEnd(4)
        .setSpec(VariableSpecProto.newBuilder().setName("w").addShape(4).addShape(4).setPinnedShard(-1)
            .setGroup(ConsistencyGroup.DEFAULT_NAME).setInitializer(InitializerSpec.newBuilder()
                .setKind(InitializerKind.CONSTANT).setA(1))
            .setOptimizer(ProtoConvert.toProto(OptimizerConfig.adam(0.01, 0.9, 0.999, 1e-8))))).build());
  }

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  private static OptimizerState state(long offset, float m, float v, int count, int arrays) {
    OptimizerState.Builder b = OptimizerState.newBuilder().setName("w").setOffset(offset).setCount(count).setSteps(40);
    for (int k = 0; k < arrays; k++) {
      float[] values = new float[count];
      java.util.Arrays.fill(values, k == 0 ? m : v);
      b.addStates(PackedArrays.ofFloats(values));
    }
    return b.build();
  }

  @Test
  void aRestoredRange_isReadBack_andTheRestoreKeepsItsSteps() {
    assertEquals(1, states.restore(state(10, 0.5f, 0.25f, 4, 2)).getInitializedCount());
    VariableSlice s = store.slice("w");
    s.initialized = true; // as the RESTORE of the values does
    s.iteration = 100;
    s.rule.stateSince(100 - s.restoredStateSteps);
    OptimizerState read = states.read(OptimizerStateRequest.newBuilder().setName("w").setOffset(8).setCount(8).build());
    assertEquals(40, read.getSteps());
    assertArrayEquals(new float[] {0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 0, 0}, PackedArrays.floats(read.getStates(0), "m"));
    assertArrayEquals(new float[] {0, 0, 0.25f, 0.25f, 0.25f, 0.25f, 0, 0}, PackedArrays.floats(read.getStates(1), "v"));
  }

  @Test
  void aRestoreIntoAnInitializedSlice_doesNothing() {
    store.slice("w").initialized = true;
    assertEquals(0, states.restore(state(8, 0.5f, 0.25f, 8, 2)).getInitializedCount());
    assertArrayEquals(new float[8], store.slice("w").rule.state()[0]);
    assertEquals(-1, store.slice("w").restoredStateSteps);
  }

  @Test
  void badRestores_areRefusedByName_andNothingIsWritten() {
    PsError outside = assertThrows(PsError.class, () -> states.restore(state(14, 1, 1, 4, 2)));
    assertTrue(outside.getMessage().contains("elements [14, 18) are outside the slice [8, 16)"), outside.getMessage());
    PsError arrays = assertThrows(PsError.class, () -> states.restore(state(8, 1, 1, 8, 1)));
    assertTrue(arrays.getMessage().contains("1 optimizer state arrays sent, its optimizer ADAM keeps 2"),
        arrays.getMessage());
    PsError count = assertThrows(PsError.class, () -> states.restore(state(8, 1, 1, 8, 2).toBuilder().setCount(6)
        .build()));
    assertTrue(count.getMessage().contains("holds 8 floats, count says 6"), count.getMessage());
    PsError unknown = assertThrows(PsError.class, () -> states.restore(state(8, 1, 1, 8, 2).toBuilder().setName("b")
        .build()));
    assertTrue(unknown.getMessage().contains("unknown variable 'b'"), unknown.getMessage());
    assertArrayEquals(new float[8], store.slice("w").rule.state()[0]);
    assertArrayEquals(new float[8], store.slice("w").rule.state()[1]);
  }

  @Test
  void readingTheStateOfASliceNotInitialized_isRefused() {
    PsError e = assertThrows(PsError.class, () -> states.read(OptimizerStateRequest.newBuilder().setName("w")
        .setOffset(8).setCount(8).build()));
    assertTrue(e.getMessage().contains("is not initialized"), e.getMessage());
  }
}
