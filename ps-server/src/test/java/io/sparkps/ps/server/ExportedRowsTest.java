package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.PsError;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An export's tables read row by row without a ps: every row of every table (and each table's
 * default row) with the values the live tables hold; the default rows alone by seeking; a checkpoint's
 * delta and a damaged file are refused naming them.
 */
class ExportedRowsTest {
  @TempDir
  Path dir;

  private static EmbeddingSpecProto spec(String name, int dim) {
    return EmbeddingSpecProto.newBuilder().setName(name).setDim(dim).setOptimizer("ADAGRAD").setLearningRate(0.1)
        .setEpsilon(1e-8).setMaxRowsPerShard(10_000).setMinCount(1).setSeed(3).setInitScale(0.1).build();
  }

  private static void step(EmbeddingTables t, String table, int dim, long step, SplittableRandom random, long... ids) {
    t.pull(table, ids, step, true);
    float[] g = new float[ids.length * dim];
    for (int i = 0; i < g.length; i++) {
      g[i] = (float) (random.nextDouble() - 0.5);
    }
    t.push(table, ids, g, step);
  }

  /** The saves of a ps that holds {@code tables} and no variables. */
  private static Snapshots snapshotsOf(EmbeddingTables tables) {
    return new Snapshots(new ShardStore(tables.shard(), new Waiters(null, Runnable::run)), tables);
  }

  private EmbeddingTables trained() {
    EmbeddingTables live = new EmbeddingTables(1);
    live.create(spec("items", 4));
    live.create(spec("users", 2));
    SplittableRandom random = new SplittableRandom(7);
    for (long s = 1; s <= 5; s++) {
      step(live, "items", 4, s, random, java.util.stream.LongStream.range(0, 300 * s).toArray());
      step(live, "users", 2, s, random, 1_000_000L + s, -5L, Long.MAX_VALUE);
    }
    return live;
  }

  @Test
  void everyRowOfAnExport_isReadWithTheLiveValues_andTheDefaultRowsBySeeking() throws Exception {
    EmbeddingTables live = trained();
    String export = dir.resolve("export").toUri().toString();
    snapshotsOf(live).save(export, true);
    Map<String, Map<Long, float[]>> read = new HashMap<>();
    try (ExportedRows.Cursor rows = ExportedRows.open(export, 1)) {
      while (rows.next()) {
        read.computeIfAbsent(rows.table(), t -> new HashMap<>()).put(rows.id(), rows.values().clone());
      }
    }
    assertEquals(1500 + 1, read.get("items").size(), "the rows and the default row");
    assertEquals(live.size("users") + 1, read.get("users").size());
    long[] ids = java.util.stream.LongStream.range(0, 1500).toArray();
    float[] held = live.pull("items", ids, 6, false);
    for (int i = 0; i < ids.length; i++) {
      assertArrayEquals(java.util.Arrays.copyOfRange(held, i * 4, i * 4 + 4), read.get("items").get(ids[i]),
          "row " + ids[i]);
    }
    assertArrayEquals(live.pull("users", new long[] {Long.MAX_VALUE}, 6, false), read.get("users").get(Long.MAX_VALUE));
    float[] unseen = live.pull("items", new long[] {99_999_999L}, 6, false);
    assertArrayEquals(unseen, read.get("items").get(Long.MIN_VALUE), "an id not held reads the default row");
    Map<String, float[]> defaults = ExportedRows.defaults(export, 1);
    assertEquals(java.util.List.of("items", "users"), java.util.List.copyOf(defaults.keySet()));
    assertArrayEquals(unseen, defaults.get("items"));
    assertArrayEquals(live.pull("users", new long[] {42L}, 6, false), defaults.get("users"));
  }

  @Test
  void aCheckpointsDelta_orADamagedFile_isRefusedNamingIt() throws Exception {
    EmbeddingTables live = trained();
    Snapshots snapshots = snapshotsOf(live);
    snapshots.save(dir.resolve("full").toUri().toString());
    step(live, "items", 4, 6, new SplittableRandom(1), 3L);
    String delta = dir.resolve("delta").toUri().toString();
    snapshots.save(delta);
    PsError refused = assertThrows(PsError.class, () -> {
      try (ExportedRows.Cursor rows = ExportedRows.open(delta, 1)) {
        rows.next();
      }
    });
    assertTrue(refused.getMessage().contains("(a checkpoint's delta): read an export"), refused.getMessage());

    String export = dir.resolve("export").toUri().toString();
    snapshots.save(export, true);
    Path file = dir.resolve("export").resolve("ps-00001.snapshot");
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 80] ^= 1; // a float of the last row (then the tables' digest, 8 bytes of no variables, the trailer)
    Files.write(file, bytes);
    Files.delete(file.resolveSibling(".ps-00001.snapshot.crc")); // as on a store that keeps no checksums
    int[] rowsRead = {0};
    PsError damaged = assertThrows(PsError.class, () -> {
      try (ExportedRows.Cursor rows = ExportedRows.open(export, 1)) {
        while (rows.next()) {
          rowsRead[0]++;
        }
      }
    });
    assertTrue(damaged.getMessage().contains("ps-00001.snapshot is damaged: its tables' SHA-256 does not match"),
        damaged.getMessage());
    assertEquals(live.size("items") + live.size("users") + 2, rowsRead[0], "it fails at the end, after every row");
  }
}
