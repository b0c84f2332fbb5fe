package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.ConsistencyMode;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.InitializerKind;
import io.sparkps.ps.grpc.proto.InitializerSpec;
import io.sparkps.ps.grpc.proto.SliceDecl;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.grpc.proto.VariableSpecProto;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.wire.PsError;
import io.sparkps.ps.wire.WireLimits;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Sizes a create request or a snapshot file states are checked before anything of that size is
 * allocated: shapes against the per-variable maximum, row ranges, group sizes, block lengths. A
 * refusal names the field and leaves the shard as it was.
 */
class WireLimitsTest {
  private ScheduledExecutorService timer;
  private ShardStore store;

  @TempDir
  Path dir;

  @BeforeEach
  void start() {
    timer = Executors.newSingleThreadScheduledExecutor();
    store = new ShardStore(0, new Waiters(timer, Runnable::run), new WireLimits(1 << 20));
  }

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  private static VariableSpecProto spec(String name, long... shape) {
    VariableSpecProto.Builder b = VariableSpecProto.newBuilder().setName(name).setPinnedShard(-1)
        .setGroup(ConsistencyGroup.DEFAULT_NAME).setInitializer(InitializerSpec.newBuilder()
            .setKind(InitializerKind.CONSTANT).setA(1))
        .setOptimizer(io.sparkps.ps.wire.ProtoConvert.toProto(io.sparkps.ps.spec.OptimizerConfig.sgd(0.1)));
    for (long d : shape) {
      b.addShape(d);
    }
    return b.build();
  }

  private String refusedCreate(SliceDecl decl) {
    PsError e = assertThrows(PsError.class, () -> store.create(CreateRequest.newBuilder()
        .addSlices(SliceDecl.newBuilder().setSpec(spec("ok", 4, 4)).setRowStart(0).setRowEnd(4)).addSlices(decl).build()));
    assertEquals(0, store.elements(), "nothing of the request was created");
    return e.getMessage();
  }

  @Test
  void shapesAndRows_areCheckedAgainstTheLimit_beforeAnythingIsCreated() {
    String huge = refusedCreate(SliceDecl.newBuilder().setSpec(spec("huge", 1L << 40, 1L << 40)).setRowEnd(1).build());
    assertTrue(huge.contains("more than 1048576 elements") && huge.contains("maxVariableElements"), huge);
    String overflow = refusedCreate(SliceDecl.newBuilder().setSpec(spec("o", Long.MAX_VALUE, 2)).setRowEnd(1).build());
    assertTrue(overflow.contains("more than 1048576 elements"), overflow);
    String negative = refusedCreate(SliceDecl.newBuilder().setSpec(spec("n", 4, -3)).setRowEnd(4).build());
    assertTrue(negative.contains("shape[1] is -3"), negative);
    String rows = refusedCreate(SliceDecl.newBuilder().setSpec(spec("r", 4, 4)).setRowStart(-1).setRowEnd(2).build());
    assertTrue(rows.contains("row_start -1 and row_end 2 are not a range within its 4 rows"), rows);
    String past = refusedCreate(SliceDecl.newBuilder().setSpec(spec("p", 4, 4)).setRowStart(2).setRowEnd(9).build());
    assertTrue(past.contains("row_end 9"), past);
    String name = refusedCreate(SliceDecl.newBuilder().setSpec(spec("x".repeat(2000), 4)).setRowEnd(4).build());
    assertTrue(name.contains("variable name of 2000 characters"), name);
  }

  @Test
  void groupSizes_areBounded() {
    for (GroupSpec g : new GroupSpec[] {
        GroupSpec.newBuilder().setName("g").setMode(ConsistencyMode.SYNC).setNumWorkers(1 << 30).build(),
        GroupSpec.newBuilder().setName("g").setMode(ConsistencyMode.SYNC).setNumWorkers(0).build(),
        GroupSpec.newBuilder().setName("g").setMode(ConsistencyMode.SSP).setNumWorkers(2).setStaleness(-1).build()}) {
      PsError e = assertThrows(PsError.class, () -> store.create(CreateRequest.newBuilder().addGroups(g).build()));
      assertTrue(e.getMessage().contains("num_workers") || e.getMessage().contains("staleness"), e.getMessage());
    }
  }

  /**
   * A snapshot file as {@link Snapshots} writes it, with the sizes a forger chooses: in the format
   * before (variables alone) or in today's ({@code saveFormat}: no tables, then the variables, then a
   * trailer, which is checked only after the sizes).
   */
  private Path forged(boolean saveFormat, int groupBlock, VariableSpecProto slice, long rowEnd) throws Exception {
    Path file = Files.createDirectories(dir.resolve(saveFormat ? "save" : "before")).resolve("ps-00000.snapshot");
    java.security.MessageDigest sha = Snapshots.sha256();
    try (DataOutputStream out = new DataOutputStream(new java.security.DigestOutputStream(Files.newOutputStream(file),
        sha))) {
      out.writeUTF(saveFormat ? Snapshots.MAGIC : "SPARKPS-SHARD-SNAPSHOT-1");
      out.writeInt(0);
      if (saveFormat) {
        out.writeInt(0); // no tables
        out.write(TableFile.digestSoFar(sha));
      }
      out.writeInt(slice == null ? 1 : 0);
      if (slice == null) {
        out.writeInt(groupBlock); // the group's block length
        out.write(new byte[16]);
      } else {
        out.writeInt(1);
        byte[] info = VariableInfoProto.newBuilder().setSpec(slice).setRowStart(0).setRowEnd(rowEnd).build().toByteArray();
        out.writeInt(info.length);
        out.write(info);
        out.writeLong(0);
        out.writeInt(0);
      }
      if (saveFormat) {
        out.write(new byte[32]);
      }
    }
    return file;
  }

  @Test
  void sizesInSnapshotFiles_areCheckedBeforeTheyAreAllocated() throws Exception {
    sizesChecked(false);
    sizesChecked(true);
  }

  private void sizesChecked(boolean saveFormat) throws Exception {
    Snapshots snapshots = new Snapshots(store, new EmbeddingTables(0));
    Path block = forged(saveFormat, Integer.MAX_VALUE, null, 0);
    PsError e = assertThrows(PsError.class, () -> snapshots.restore(block.getParent().toString()));
    assertTrue(e.getMessage().contains("damaged: a block of 2147483647 bytes in a file of"), e.getMessage());
    Path huge = forged(saveFormat, 0, spec("huge", 1L << 30, 1L << 30), 1L << 30);
    e = assertThrows(PsError.class, () -> snapshots.restore(huge.getParent().toString()));
    assertTrue(e.getMessage().contains("more than 1048576 elements"), e.getMessage());
    Path big = forged(saveFormat, 0, spec("big", 1000, 1000), 1000); // within the limit, but not in this small file
    e = assertThrows(PsError.class, () -> snapshots.restore(big.getParent().toString()));
    assertTrue(e.getMessage().contains("would hold 1000000 values, more than the file's"), e.getMessage());
    assertEquals(0, store.elements());
  }
}
