package io.sparkps.ps.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.grpc.proto.SnapshotReply;
import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One file per ps and save, and the saves of the format before still restore. The fixture
 * {@code checkpoint-format-2} was written by the code of that format (variables in {@code
 * ps-00000.snapshot}, version 2; the tables beside it in {@code ps-00000.tables}): a variable with
 * Adam's state and a table on AdaGrad, saved whole into {@code ckpt-1}, then, after more steps, into
 * {@code ckpt-2}, whose tables file holds only what changed and names {@code ckpt-1} by the relative
 * path it was written to ({@code checkpoints/ckpt-1}, not found from here: the chain is found beside
 * it, as for a checkpoint folder copied whole).
 * {@code expected.txt} holds what the ps held after the second save.
 */
class SnapshotFormatsTest {
  @TempDir
  Path dir;

  private Path fixture() throws Exception {
    Path root = dir.resolve("format-2");
    for (String ckpt : new String[] {"ckpt-1", "ckpt-2"}) {
      Files.createDirectories(root.resolve(ckpt));
      for (String file : new String[] {"ps-00000.snapshot", "ps-00000.tables"}) {
        try (var in = getClass().getResourceAsStream("/checkpoint-format-2/" + ckpt + "/" + file)) {
          Files.copy(in, root.resolve(ckpt).resolve(file));
        }
      }
    }
    return root;
  }

  private Map<String, String> expected() throws Exception {
    Map<String, String> lines = new HashMap<>();
    try (var in = getClass().getResourceAsStream("/checkpoint-format-2/expected.txt")) {
      for (String line : new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
        lines.put(line.substring(0, line.indexOf(' ')), line.substring(line.indexOf(' ') + 1));
      }
    }
    return lines;
  }

  private static float[] floats(String list) {
    String[] parts = list.substring(1, list.length() - 1).split(", ");
    float[] out = new float[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = Float.parseFloat(parts[i]);
    }
    return out;
  }

  private record Ps(ShardStore store, EmbeddingTables tables, Snapshots snapshots) {
    static Ps empty() {
      ShardStore store = new ShardStore(0, new Waiters(null, Runnable::run));
      EmbeddingTables tables = new EmbeddingTables(0);
      return new Ps(store, tables, new Snapshots(store, tables));
    }

    void assertHolds(Map<String, String> expected) {
      VariableSlice w = store.slice("w");
      assertEquals(Long.parseLong(expected.get("w.iteration")), w.iteration);
      assertEquals(Long.parseLong(expected.get("w.version")), w.version);
      assertTrue(w.initialized);
      assertArrayEquals(floats(expected.get("w.values")), w.values);
      assertArrayEquals(floats(expected.get("w.state0")), w.rule.state()[0], "Adam's first moments");
      assertArrayEquals(floats(expected.get("w.state1")), w.rule.state()[1], "Adam's second moments");
      assertEquals(Integer.parseInt(expected.get("items.size")), tables.size("items"));
      assertArrayEquals(floats(expected.get("items.rows")), tables.pull("items", LongStream.range(0, 70).toArray(), 3,
          false), "the full save of ckpt-1 with the delta of ckpt-2 applied");
    }
  }

  @Test
  void aSaveOfTheFormatBefore_restoresThroughItsChain_andTheNextSaveIsOneFileHoldingEverything() throws Exception {
    Path root = fixture();
    Map<String, String> expected = expected();
    Ps ps = Ps.empty();
    SnapshotReply restored = ps.snapshots().restore(root.resolve("ckpt-2").toUri().toString());
    assertEquals(1, restored.getVariables());
    assertEquals(1, restored.getTables());
    ps.assertHolds(expected);

    String next = dir.resolve("ckpt-3").toUri().toString();
    Snapshots.Saved saved = ps.snapshots().saveWithTables(next, false);
    assertEquals(java.util.List.of("ps-00000.snapshot"), fileNames(dir.resolve("ckpt-3")), "one file: no tables file");
    assertFalse(saved.tables().tables().get(0).delta(), "the first save after a restore is whole");
    assertEquals(Files.size(dir.resolve("ckpt-3").resolve("ps-00000.snapshot")), saved.reply().getBytes());
    assertEquals(saved.reply().getFile(), saved.reply().getTablesFile(), "the tables are in the save's own file");
    try (DataInputStream in = new DataInputStream(Files.newInputStream(dir.resolve("ckpt-3").resolve(
        "ps-00000.snapshot")))) {
      assertEquals(Snapshots.MAGIC, in.readUTF());
    }
    Ps again = Ps.empty();
    SnapshotReply checked = again.snapshots().restore(io.sparkps.ps.grpc.proto.SnapshotRequest.newBuilder()
        .setPath(next).setExpectedBytes(saved.reply().getBytes()).setExpectedSha256(saved.reply().getSha256()).build());
    assertEquals(saved.reply().getSha256(), checked.getSha256(), "the file's digest, as the checkpoint's marker records it");
    again.assertHolds(expected);
  }

  @Test
  void aSaveIntoADirectoryWithATablesFileOfTheFormatBefore_removesIt() throws Exception {
    Path root = fixture();
    Ps ps = Ps.empty();
    String ckpt1 = root.resolve("ckpt-1").toUri().toString();
    ps.snapshots().restore(ckpt1);
    ps.snapshots().save(ckpt1);
    assertEquals(java.util.List.of("ps-00000.snapshot"), fileNames(root.resolve("ckpt-1")),
        "else the stale tables file would be read in place of the save's tables");
  }

  @Test
  void aSaveThatOthersBuildOn_isReadForItsTablesAlone_whoseOwnDigestChecksThem() throws Exception {
    Path root = fixture();
    Ps ps = Ps.empty();
    ps.snapshots().restore(root.resolve("ckpt-2").toUri().toString());
    String full = dir.resolve("ckpt-3").toUri().toString();
    ps.snapshots().save(full);
    ps.tables().pull("items", new long[] {5L}, 4, true);
    ps.tables().push("items", new long[] {5L}, new float[] {1, 2, 3, 4}, 4);
    String delta = dir.resolve("ckpt-4").toUri().toString();
    assertTrue(ps.snapshots().save(delta).getTablesIncremental());
    float[] rows = ps.tables().pull("items", LongStream.range(0, 70).toArray(), 5, false);

    // The last of w's values in the full save: its variables, which a restore of the delta does not need.
    Path file = dir.resolve("ckpt-3").resolve("ps-00000.snapshot");
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 32 - 2 * 12 * 4 - 1] ^= 1;
    Files.write(file, bytes);
    Files.deleteIfExists(file.resolveSibling(".ps-00000.snapshot.crc"));
    Ps fromDelta = Ps.empty();
    fromDelta.snapshots().restore(delta);
    assertArrayEquals(rows, fromDelta.tables().pull("items", LongStream.range(0, 70).toArray(), 5, false));
    assertArrayEquals(ps.store().slice("w").values, fromDelta.store().slice("w").values);
    io.sparkps.ps.wire.PsError damaged = org.junit.jupiter.api.Assertions.assertThrows(io.sparkps.ps.wire.PsError.class,
        () -> Ps.empty().snapshots().restore(full));
    assertTrue(damaged.getMessage().contains("ps-00000.snapshot is damaged: its SHA-256 does not match its trailer"),
        damaged.getMessage());

    // A damaged table in the full save fails the delta's restore, naming the file.
    bytes[bytes.length - 32 - 2 * 12 * 4 - 1] ^= 1;
    Files.write(file, bytes);
    Ps.empty().snapshots().restore(full);
    bytes[100] ^= 1;
    Files.write(file, bytes);
    io.sparkps.ps.wire.PsError chain = org.junit.jupiter.api.Assertions.assertThrows(io.sparkps.ps.wire.PsError.class,
        () -> Ps.empty().snapshots().restore(delta));
    assertTrue(chain.getMessage().contains("ckpt-3/ps-00000.snapshot is damaged"), chain.getMessage());
  }

  @Test
  void anExportOfTheFormatBefore_isReadRowByRow() throws Exception {
    Path root = fixture();
    Ps ps = Ps.empty();
    ps.snapshots().restore(root.resolve("ckpt-1").toUri().toString());
    Map<Long, float[]> read = new HashMap<>();
    // ckpt-1 saved its table whole, as an export does.
    try (ExportedRows.Cursor rows = ExportedRows.open(root.resolve("ckpt-1").toUri().toString(), 0)) {
      while (rows.next()) {
        assertEquals("items", rows.table());
        read.put(rows.id(), rows.values().clone());
      }
    }
    assertEquals(51, read.size(), "50 rows and the default row");
    long[] ids = LongStream.range(0, 50).toArray();
    float[] held = ps.tables().pull("items", ids, 2, false);
    for (int i = 0; i < ids.length; i++) {
      assertArrayEquals(java.util.Arrays.copyOfRange(held, i * 4, i * 4 + 4), read.get(ids[i]), "row " + i);
    }
    assertArrayEquals(ps.tables().pull("items", new long[] {999L}, 2, false),
        ExportedRows.defaults(root.resolve("ckpt-1").toUri().toString(), 0).get("items"));
  }

  private static java.util.List<String> fileNames(Path dir) throws Exception {
    try (var files = Files.list(dir)) {
      return files.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted().toList();
    }
  }
}
