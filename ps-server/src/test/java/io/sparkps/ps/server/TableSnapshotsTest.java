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

  private String save(TableSnapshots s, String name) throws Exception {
    return dir.resolve(name).toUri().toString();
  }

  @Test
  void aDeltaHoldsOnlyTheChangedRows_andTheChainRestoresTheLiveTableExactly() throws Exception {
    EmbeddingTables live = tables(spec("items", 10_000, 0));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(5);
    step(live, "items", 1, random, range(0, 1000));
    String full = save(snapshots, "ckpt-1");
    TableSnapshots.Result first = snapshots.save(full);
    assertEquals(List.of(new TableSnapshots.TableInfo("items", false, 1001, 0)), first.tables(),
        "a full save: 1,000 rows and the default row");
    step(live, "items", 2, random, 5L, 6L, 7L);
    String second = save(snapshots, "ckpt-2");
    TableSnapshots.Result delta = snapshots.save(second);
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), delta.tables(), "only the 3 rows pushed");
    assertTrue(delta.bytes() * 50 < first.bytes(), delta.bytes() + " bytes against " + first.bytes());
    step(live, "items", 3, random, 7L, 2000L);
    String third = save(snapshots, "ckpt-3");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 2, 0)), snapshots.save(third).tables());

    EmbeddingTables copy = new EmbeddingTables(2);
    TableSnapshots.Read read = new TableSnapshots(copy).read(third);
    assertThrows(PsError.class, () -> copy.size("items"), "nothing is in place before commit");
    read.commit();
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
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(4);
    step(live, "items", 1, random, range(0, 10));
    String a = save(snapshots, "a");
    assertEquals(List.of(), snapshots.save(a).needs());
    step(live, "items", 2, random, 3L);
    String b = save(snapshots, "b");
    assertEquals(List.of(a), snapshots.save(b).needs());
    step(live, "items", 3, random, 4L);
    String c = save(snapshots, "c");
    assertEquals(List.of(a, b), snapshots.save(c).needs());
    // A checkpoint retried into the same directory: a delta would name itself as its base.
    TableSnapshots.Result again = snapshots.save(c);
    assertEquals(List.of(), again.needs());
    assertFalse(again.tables().get(0).delta());
    EmbeddingTables copy = new EmbeddingTables(2);
    new TableSnapshots(copy).read(c).commit();
    assertArrayEquals(live.pull("items", range(0, 10), 4, false), copy.pull("items", range(0, 10), 4, false));
  }

  @Test
  void anExportIsWhole_andLeavesTheCheckpointsChainAsItWas() throws Exception {
    EmbeddingTables live = tables(spec("items", 10_000, 0));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(2);
    step(live, "items", 1, random, range(0, 100));
    snapshots.save(save(snapshots, "ckpt-1"));
    step(live, "items", 2, random, 5L, 6L);
    String export = save(snapshots, "model-tables");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", false, 101, 0)), snapshots.save(export, true).tables(),
        "an export holds every row, though a checkpoint came before it");
    step(live, "items", 3, random, 7L);
    // The next checkpoint still holds rows 5 and 6 (changed before the export) and builds on ckpt-1.
    String next = save(snapshots, "ckpt-2");
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), snapshots.save(next).tables());
    java.nio.file.Files.delete(dir.resolve("model-tables").resolve("ps-00002.tables"));
    EmbeddingTables copy = new EmbeddingTables(2);
    new TableSnapshots(copy).read(next).commit();
    long[] all = range(0, 100);
    assertArrayEquals(live.pull("items", all, 4, false), copy.pull("items", all, 4, false),
        "the checkpoint's chain does not need the export");
    EmbeddingTables exported = new EmbeddingTables(2);
    snapshots.save(export, true);
    new TableSnapshots(exported).read(export).commit();
    assertArrayEquals(live.pull("items", all, 4, false), exported.pull("items", all, 4, false));
  }

  @Test
  void evictedIds_areGoneAfterARestore_andEveryEighthSaveIsFull() throws Exception {
    EmbeddingTables live = tables(spec("users", 4, 2));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(1);
    step(live, "users", 1, random, 1L, 2L, 3L, 4L);
    snapshots.save(save(snapshots, "s0"));
    step(live, "users", 9, random, 10L); // full: evicts every row untouched since step 7
    TableSnapshots.Result delta = snapshots.save(save(snapshots, "s1"));
    assertEquals(List.of(new TableSnapshots.TableInfo("users", true, 1, 4)), delta.tables());
    EmbeddingTables copy = new EmbeddingTables(2);
    new TableSnapshots(copy).read(save(snapshots, "s1")).commit();
    assertEquals(1, copy.size("users"));
    assertArrayEquals(live.pull("users", new long[] {1L, 10L}, 10, false),
        copy.pull("users", new long[] {1L, 10L}, 10, false), "id 1 reads the default row again, id 10 its row");
    for (int i = 2; i < TableSnapshots.FULL_EVERY; i++) {
      assertTrue(snapshots.save(save(snapshots, "s" + i)).tables().get(0).delta(), "save " + i);
    }
    assertFalse(snapshots.save(save(snapshots, "s" + TableSnapshots.FULL_EVERY)).tables().get(0).delta(),
        "the eighth save after a full one is full");
  }

  @Test
  void aSaveThatFails_keepsWhatChangedForTheNextOne() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(2);
    step(live, "items", 1, random, range(0, 10));
    snapshots.save(save(snapshots, "a"));
    step(live, "items", 2, random, 3L, 4L);
    // A folder where the save renames its file to: written whole, then not put in place.
    Files.createDirectories(dir.resolve("b").resolve("ps-00002.tables")).resolve("x").toFile().createNewFile();
    assertThrows(java.io.IOException.class, () -> snapshots.save(save(snapshots, "b")));
    step(live, "items", 3, random, 5L);
    TableSnapshots.Result next = snapshots.save(save(snapshots, "c"));
    assertEquals(List.of(new TableSnapshots.TableInfo("items", true, 3, 0)), next.tables(),
        "rows 3 and 4 of the failed save, and row 5");
    EmbeddingTables copy = new EmbeddingTables(2);
    new TableSnapshots(copy).read(save(snapshots, "c")).commit();
    assertArrayEquals(live.pull("items", range(0, 10), 4, false), copy.pull("items", range(0, 10), 4, false));
  }

  @Test
  void aDamagedFileOrAMissingLinkOfTheChain_failsNamingIt_andReplacesNothing() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(3);
    step(live, "items", 1, random, range(0, 10));
    snapshots.save(save(snapshots, "full"));
    step(live, "items", 2, random, 1L);
    snapshots.save(save(snapshots, "delta"));

    Path file = dir.resolve("delta").resolve("ps-00002.tables");
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 40] ^= 1; // a float of the row
    Files.write(file, bytes);
    PsError byTheFileSystem = assertThrows(PsError.class, () -> new TableSnapshots(live).read(save(snapshots, "delta")));
    assertTrue(byTheFileSystem.getMessage().contains("ps-00002.tables is damaged: "), byTheFileSystem.getMessage());
    // Without the local file system's checksums (as on a store that keeps none), the file's own trailer tells.
    Files.delete(file.resolveSibling(".ps-00002.tables.crc"));
    PsError damaged = assertThrows(PsError.class, () -> new TableSnapshots(live).read(save(snapshots, "delta")));
    assertTrue(damaged.getMessage().contains("ps-00002.tables is damaged: its SHA-256 does not match"),
        damaged.getMessage());
    bytes[bytes.length - 40] ^= 1; // a float of the row
    Files.write(file, bytes);

    Files.delete(dir.resolve("full").resolve("ps-00002.tables"));
    PsError missing = assertThrows(PsError.class, () -> new TableSnapshots(live).read(save(snapshots, "delta")));
    assertTrue(missing.getMessage().contains("holds only what changed since the save in ")
        && missing.getMessage().contains("full"), missing.getMessage());
    assertEquals(10, live.size("items"), "the live table is untouched");
  }

  @Test
  void aCheckpointFolderCopiedWhole_stillFindsTheSavesItBuildsOn() throws Exception {
    EmbeddingTables live = tables(spec("items", 1000, 0));
    TableSnapshots snapshots = new TableSnapshots(live);
    SplittableRandom random = new SplittableRandom(4);
    Path runs = Files.createDirectories(dir.resolve("runs"));
    step(live, "items", 1, random, range(0, 10));
    snapshots.save(runs.resolve("ckpt-1").toUri().toString());
    step(live, "items", 2, random, 2L);
    snapshots.save(runs.resolve("ckpt-2").toUri().toString());
    Path moved = dir.resolve("moved");
    Files.move(runs, moved);
    EmbeddingTables copy = new EmbeddingTables(2);
    new TableSnapshots(copy).read(moved.resolve("ckpt-2").toUri().toString()).commit();
    assertArrayEquals(live.pull("items", range(0, 10), 3, false), copy.pull("items", range(0, 10), 3, false));
  }
}
