package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.PsError;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Incremental checkpoints of a ps's embedding tables, on real files: a full save, then deltas of
 * only the rows changed and the ids evicted since, restored through their chain to the exact rows,
 * optimizer state and update counts of the live table (checked by training both on afterwards).
 */
class TableSnapshotsTest {
  private static final int DIM = 4;
  @TempDir
  Path dir;

  private static EmbeddingSpecProto spec(String name, int maxRows, long evictAfter) {
    return EmbeddingSpecProto.newBuilder().setName(name).setDim(DIM).setOptimizer("LAZY_ADAM").setLearningRate(0.05)
        .setBeta1(0.9).setBeta2(0.999).setEpsilon(1e-8).setMaxRowsPerShard(maxRows).setEvictAfterSteps(evictAfter)
        .setMinCount(1).setSeed(3).setInitScale(0.1).build();
  }

  private static EmbeddingTables tables(EmbeddingSpecProto... specs) {
    EmbeddingTables t = new EmbeddingTables(2);
    for (EmbeddingSpecProto s : specs) {
      t.create(s);
    }
    return t;
  }

  /** One training step on {@code ids}: pull, then push gradients drawn from {@code random}. */
  private static void step(EmbeddingTables t, String table, long step, SplittableRandom random, long... ids) {
    t.pull(table, ids, step, true);
    float[] g = new float[ids.length * DIM];
    for (int i = 0; i < g.length; i++) {
      g[i] = (float) (random.nextDouble() - 0.5);
    }
    t.push(table, ids, g, step);
  }

  private static long[] range(long from, long to) {
    return java.util.stream.LongStream.range(from, to).toArray();
  }

  private String at(String name) {
    return dir.resolve(name).toUri().toString();
  }

  /** The saves of a ps that holds {@code tables} and no variables. */
  private static Snapshots snapshotsOf(EmbeddingTables tables) {
    return new Snapshots(new ShardStore(tables.shard(), new Waiters(null, Runnable::run)), tables);
  }

  /** A checkpoint's save into {@code dir}: what it wrote of the tables. */
  private static TableSnapshots.Result save(Snapshots s, String dir) throws Exception {
    return s.saveWithTables(dir, false).tables();
  }

  /** An export into {@code dir}: every table whole. */
  private static TableSnapshots.Result export(Snapshots s, String dir) throws Exception {
    return s.saveWithTables(dir, true).tables();
  }

  @Test
  void aDeltaHoldsOnlyTheChangedRows_andTheChainRestoresTheLiveTableExactly() throws Exception {
    EmbeddingTables live = tables(spec("items", 10_000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(5);
    step(live, "items", 1, random, range(0, 1000));
    String full = at("ckpt-1");
    TableSnapshots.Result first = save(snapshots, full);
    assertEquals(List.of(new TableSnapshots.TableInfo("items", false, 1001, 0)), first.tables(),
        "a full save: 1,000 rows and the default row");
    step(live, "items", 2, random, 5L, 6L, 7L);
    String second = at("ckpt-2");
    TableSnapshots.Result delta = save(snapshots, second);
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), delta.tables(), "only the 3 rows pushed");
    assertTrue(delta.bytes() * 50 < first.bytes(), delta.bytes() + " bytes against " + first.bytes());
    step(live, "items", 3, random, 7L, 2000L);
    String third = at("ckpt-3");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 2, 0)), save(snapshots, third).tables());

    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(io.sparkps.ps.grpc.proto.SnapshotRequest.newBuilder().setPath(third)
        .setVerifyOnly(true).build());
    assertThrows(PsError.class, () -> copy.size("items"), "a check puts nothing in place");
    snapshotsOf(copy).restore(third);
    assertEquals(live.size("items"), copy.size("items"));
    long[] all = range(0, 2001);
    assertArrayEquals(live.pull("items", all, 4, false), copy.pull("items", all, 4, false));
    // The optimizer's state and each row's update count came back too: the same steps give the same rows.
    step(live, "items", 4, new SplittableRandom(9), 5L, 7L, 2000L, 3L);
    step(copy, "items", 4, new SplittableRandom(9), 5L, 7L, 2000L, 3L);
    assertArrayEquals(live.pull("items", all, 5, false), copy.pull("items", all, 5, false));
  }

  @Test
  void aSaveNamesTheSavesItBuildsOn_andASaveAgainIntoTheSameDirectoryIsWhole() throws Exception {
    EmbeddingTables live = tables(spec("items", 10_000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(4);
    step(live, "items", 1, random, range(0, 10));
    String a = at("a");
    assertEquals(List.of(), save(snapshots, a).needs());
    step(live, "items", 2, random, 3L);
    String b = at("b");
    assertEquals(List.of(a), save(snapshots, b).needs());
    step(live, "items", 3, random, 4L);
    String c = at("c");
    assertEquals(List.of(a, b), save(snapshots, c).needs());
    // A checkpoint retried into the same directory: a delta would name itself as its base.
    TableSnapshots.Result again = save(snapshots, c);
    assertEquals(List.of(), again.needs());
    assertFalse(again.tables().get(0).delta());
    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(c);
    assertArrayEquals(live.pull("items", range(0, 10), 4, false), copy.pull("items", range(0, 10), 4, false));
  }

  @Test
  void anExportIsWhole_andLeavesTheCheckpointsChainAsItWas() throws Exception {
    EmbeddingTables live = tables(spec("items", 10_000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(2);
    step(live, "items", 1, random, range(0, 100));
    save(snapshots, at("ckpt-1"));
    step(live, "items", 2, random, 5L, 6L);
    String export = at("model-tables");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", false, 101, 0)), export(snapshots, export).tables(),
        "an export holds every row, though a checkpoint came before it");
    step(live, "items", 3, random, 7L);
    // The next checkpoint still holds rows 5 and 6 (changed before the export) and builds on ckpt-1.
    String next = at("ckpt-2");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), save(snapshots, next).tables());
    java.nio.file.Files.delete(dir.resolve("model-tables").resolve("ps-00002.snapshot"));
    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(next);
    long[] all = range(0, 100);
    assertArrayEquals(live.pull("items", all, 4, false), copy.pull("items", all, 4, false),
        "the checkpoint's chain does not need the export");
    EmbeddingTables exported = new EmbeddingTables(2);
    export(snapshots, export);
    snapshotsOf(exported).restore(export);
    assertArrayEquals(live.pull("items", all, 4, false), exported.pull("items", all, 4, false));
  }

  @Test
  void evictedIds_areGoneAfterARestore_andEveryEighthSaveIsFull() throws Exception {
    EmbeddingTables live = tables(spec("users", 4, 2));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(1);
    step(live, "users", 1, random, 1L, 2L, 3L, 4L);
    save(snapshots, at("s0"));
    step(live, "users", 9, random, 10L); // full: evicts every row untouched since step 7
    TableSnapshots.Result delta = save(snapshots, at("s1"));
    assertEquals(List.of(new TableSnapshots.TableInfo("users", true, 1, 4)), delta.tables());
    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(at("s1"));
    assertEquals(1, copy.size("users"));
    assertArrayEquals(live.pull("users", new long[] {1L, 10L}, 10, false),
        copy.pull("users", new long[] {1L, 10L}, 10, false), "id 1 reads the default row again, id 10 its row");
    for (int i = 2; i < Snapshots.FULL_EVERY; i++) {
      assertTrue(save(snapshots, at("s" + i)).tables().get(0).delta(), "save " + i);
    }
    assertFalse(save(snapshots, at("s" + Snapshots.FULL_EVERY)).tables().get(0).delta(),
        "the eighth save after a full one is full");
  }

  @Test
  void aSaveThatFails_keepsWhatChangedForTheNextOne() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(2);
    step(live, "items", 1, random, range(0, 10));
    save(snapshots, at("a"));
    step(live, "items", 2, random, 3L, 4L);
    // A folder where the save renames its file to: written whole, then not put in place.
    Files.createDirectories(dir.resolve("b").resolve("ps-00002.snapshot")).resolve("x").toFile().createNewFile();
    assertThrows(java.io.IOException.class, () -> save(snapshots, at("b")));
    step(live, "items", 3, random, 5L);
    TableSnapshots.Result next = save(snapshots, at("c"));
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), next.tables(),
        "rows 3 and 4 of the failed save, and row 5");
    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(at("c"));
    assertArrayEquals(live.pull("items", range(0, 10), 4, false), copy.pull("items", range(0, 10), 4, false));
  }

  @Test
  void aDamagedFileOrAMissingLinkOfTheChain_failsNamingIt_andReplacesNothing() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(3);
    step(live, "items", 1, random, range(0, 10));
    save(snapshots, at("full"));
    step(live, "items", 2, random, 1L);
    save(snapshots, at("delta"));

    Path file = dir.resolve("delta").resolve("ps-00002.snapshot");
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 80] ^= 1; // a float of the last row (then the tables' digest, 8 bytes of no variables, the trailer)
    Files.write(file, bytes);
    PsError byTheFileSystem = assertThrows(PsError.class, () -> snapshotsOf(live).restore(at("delta")));
    assertTrue(byTheFileSystem.getMessage().contains("ps-00002.snapshot is damaged: "), byTheFileSystem.getMessage());
    // Without the local file system's checksums (as on a store that keeps none), the file's own trailer tells.
    Files.delete(file.resolveSibling(".ps-00002.snapshot.crc"));
    PsError damaged = assertThrows(PsError.class, () -> snapshotsOf(live).restore(at("delta")));
    assertTrue(damaged.getMessage().contains("ps-00002.snapshot is damaged: its tables' SHA-256 does not match"),
        damaged.getMessage());
    bytes[bytes.length - 80] ^= 1;
    Files.write(file, bytes);

    Files.delete(dir.resolve("full").resolve("ps-00002.snapshot"));
    PsError missing = assertThrows(PsError.class, () -> snapshotsOf(live).restore(at("delta")));
    assertTrue(missing.getMessage().contains("holds only what changed since the save in ")
        && missing.getMessage().contains("full"), missing.getMessage());
    assertEquals(10, live.size("items"), "the live table is untouched");
  }

  @Test
  void aCheckpointFolderCopiedWhole_stillFindsTheSavesItBuildsOn() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    Snapshots snapshots = snapshotsOf(live);
    SplittableRandom random = new SplittableRandom(4);
    Path runs = Files.createDirectories(dir.resolve("runs"));
    step(live, "items", 1, random, range(0, 10));
    save(snapshots, runs.resolve("ckpt-1").toUri().toString());
    step(live, "items", 2, random, 2L);
    save(snapshots, runs.resolve("ckpt-2").toUri().toString());
    Path moved = dir.resolve("moved");
    Files.move(runs, moved);
    EmbeddingTables copy = new EmbeddingTables(2);
    snapshotsOf(copy).restore(moved.resolve("ckpt-2").toUri().toString());
    assertArrayEquals(live.pull("items", range(0, 10), 3, false), copy.pull("items", range(0, 10), 3, false));
  }
}
