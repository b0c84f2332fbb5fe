package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.PsError;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The embedding tables' part of a ps's checkpoints ({@link Snapshots} writes and reads the file),
 * incremental: a save writes, per table, either every row (a full save) or only the rows changed and
 * the ids evicted since this ps's previous save (a delta, naming the directory of the save it builds
 * on). Every {@link Snapshots#FULL_EVERY}th save of a table is full, so a restore reads at most that
 * many files, and the first save after the ps started or restored from elsewhere is full.
 *
 * <p>A restore follows a delta's chain back to its full save, applies the saves in order and
 * replaces the tables: a table's rows, optimizer state, update counts and last steps come back
 * exactly. Admission counts (ids seen fewer than minCount times) are not saved: they start again.
 * Every file of the chain is read whole and checked before anything is replaced; a damaged file or a
 * missing link of a chain fails naming it. Checkpoints of the format before (a {@code
 * ps-NNNNN.tables} file beside the variables' snapshot) are still read.
 */
final class TableSnapshots {
  private static final int MAX_CHAIN = 10_000;
  private final EmbeddingTables tables;
  /** Per table: the directory of this ps's last save of it, and the saves it builds on (its full save first). */
  private final Map<String, Saved> last = new HashMap<>();
  /** What the last restore put in place (null: none since this ps started). */
  private Result placed;

  private record Saved(String dir, List<String> needs) {}

  /** What one table's save or restore held. */
  record TableInfo(String name, boolean delta, int rows, int evicted) {}

  /**
   * What a save wrote, or a restore read: the file, the bytes of its tables, each table, and every
   * directory a restore of it reads besides it (the saves its deltas build on, back to their full
   * saves).
   */
  record Result(String file, long bytes, List<TableInfo> tables, List<String> needs) {}

  /** Checkpoints of {@code tables}. */
  TableSnapshots(EmbeddingTables tables) {
    this.tables = tables;
  }

  /** The file of ps {@code shard}'s tables below {@code dir} in the format before, which held them alone. */
  static Path legacyFile(String dir, int shard) {
    return new Path(dir, String.format("ps-%05d.tables", shard));
  }

  /** The ps these are the tables of. */
  int shard() {
    return tables.shard();
  }

  /**
   * Writes the table count and every table (whole, or what changed since this ps's last save) to
   * {@code out}, for a save into {@code dir}. The caller holds this object's lock until it has
   * {@linkplain Save#commit() committed} the save (once its file is in place) or {@linkplain
   * Save#abort() aborted} it; {@code whole}: every table whole, and the checkpoints' chain left as it
   * is (an export: no marks taken, the next save builds on the previous one, not on this).
   */
  Save write(DataOutputStream out, String dir, boolean whole) throws IOException {
    List<EmbeddingTables.Table> all = tables.all();
    Save save = new Save(all, whole);
    int start = out.size();
    out.writeInt(all.size());
    try {
      for (EmbeddingTables.Table t : all) {
        Saved before = last.get(t.spec().getName());
        // A save again into the directory of the last one (a retried checkpoint) is whole: a delta
        // would name its own directory as its base.
        boolean delta = !whole && before != null && before.needs().size() + 1 < Snapshots.FULL_EVERY
            && !new Path(before.dir()).equals(new Path(dir));
        synchronized (t.rows()) {
          save.infos.add(TableFile.writeTable(out, t, delta ? before.dir() : null));
          List<String> chain = new ArrayList<>();
          if (delta) {
            chain.addAll(before.needs());
            chain.add(before.dir());
          }
          save.needs.addAll(chain);
          save.saved.put(t.spec().getName(), new Saved(dir, List.copyOf(chain)));
          if (!whole) {
            save.taken.put(t.spec().getName(), t.rows().takeMarks());
          }
        }
      }
    } catch (IOException | RuntimeException e) {
      save.abort();
      throw e;
    }
    save.bytes = out.size() - start;
    return save;
  }

  /** A save's tables, written and not yet in place. */
  final class Save {
    private final List<EmbeddingTables.Table> all;
    private final boolean whole;
    private final Map<String, EmbeddingShard.Marks> taken = new HashMap<>();
    private final List<TableInfo> infos = new ArrayList<>();
    private final java.util.TreeSet<String> needs = new java.util.TreeSet<>();
    private final Map<String, Saved> saved = new HashMap<>();
    private long bytes;

    private Save(List<EmbeddingTables.Table> all, boolean whole) {
      this.all = all;
      this.whole = whole;
    }

    /** The file is in place: the next save of each table builds on this one (unless it was an export). */
    Result commit(String file) {
      if (!whole) {
        last.putAll(saved);
      }
      return new Result(file, bytes, List.copyOf(infos), List.copyOf(needs));
    }

    /** Not written: what changed since the last save stays changed, for the next one. */
    void abort() {
      for (EmbeddingTables.Table t : all) {
        EmbeddingShard.Marks marks = taken.remove(t.spec().getName());
        if (marks != null) {
          synchronized (t.rows()) {
            t.rows().giveBack(marks);
          }
        }
      }
    }
  }

  /**
   * Reads the tables of a save whose own file is {@code first} (following each delta back to its
   * full save) into new rows, checking every file, and replaces nothing yet: {@link Read#commit()}
   * puts them in place. Null when the save holds no tables (this ps's tables are then left as they
   * are).
   */
  synchronized Read read(FileSystem fs, TableFile.Link first) throws IOException {
    if (first.parts().isEmpty()) {
      return null;
    }
    Path source = first.file();
    Map<String, EmbeddingSpecProto> specs = new java.util.TreeMap<>();
    Map<String, EmbeddingShard> restored = new HashMap<>();
    List<TableInfo> infos = new ArrayList<>();
    for (TableFile.Link link : chain(fs, first)) {
      for (TableFile.Part part : link.parts()) {
        String name = part.spec().getName();
        EmbeddingSpecProto known = specs.get(name);
        if (known != null && !known.equals(part.spec())) {
          throw PsError.invalid(link.file() + " saves table '" + name + "' with another spec than the save it builds on");
        }
        if (!restored.containsKey(name)) {
          if (part.delta()) {
            throw PsError.invalid(link.file() + " holds a delta of table '" + name + "' whose full save is not in its "
                + "chain");
          }
          restored.put(name, tables.newRows(part.spec()));
          specs.put(name, part.spec());
        }
        part.applyTo(restored.get(name));
        if (link == first) {
          infos.add(new TableInfo(name, part.delta(), part.rowCount(), part.evicted().length));
        }
      }
    }
    return new Read(new Result(source.getName(), fs.getFileStatus(source).getLen(), infos, List.of()), specs, restored);
  }

  /** Tables read from a checkpoint, not yet in place. */
  final class Read {
    private final Result result;
    private final Map<String, EmbeddingSpecProto> specs;
    private final Map<String, EmbeddingShard> rows;

    private Read(Result result, Map<String, EmbeddingSpecProto> specs, Map<String, EmbeddingShard> rows) {
      this.result = result;
      this.specs = specs;
      this.rows = rows;
    }

    /** What was read. */
    Result result() {
      return result;
    }

    /**
     * As {@link #commit()} when none of this ps's tables holds a row (a replaced ps's refill: the
     * first wins, a later one finds rows and leaves them); whether it did.
     */
    boolean commitIfEmpty() {
      synchronized (TableSnapshots.this) {
        for (EmbeddingTables.Table t : tables.all()) {
          synchronized (t.rows()) {
            if (t.rows().size() > 0) {
              return false;
            }
          }
        }
        commit();
        return true;
      }
    }

    /** Replaces this ps's tables of those names with what was read; the next save of every table is full. */
    void commit() {
      synchronized (TableSnapshots.this) {
        last.clear();
        placed = result;
        specs.forEach((name, spec) -> {
          EmbeddingShard shard = rows.get(name);
          shard.markCheckpointed();
          tables.replace(spec, shard);
        });
      }
    }
  }

  /**
   * What the last restore put in place, or null when none did since this ps started: what a worker
   * whose refill came second is told (the first one's refill).
   */
  synchronized Result placed() {
    return placed;
  }

  /** The files to apply, the full save first, ending with {@code first}. */
  private List<TableFile.Link> chain(FileSystem fs, TableFile.Link first) throws IOException {
    List<TableFile.Link> links = new ArrayList<>();
    TableFile.Link link = first;
    while (true) {
      if (links.size() > MAX_CHAIN) {
        throw PsError.invalid(first.file() + " builds on more than " + MAX_CHAIN + " saves: a cycle of deltas?");
      }
      links.add(0, link);
      String base = link.parts().stream().filter(TableFile.Part::delta).map(TableFile.Part::base).findFirst()
          .orElse(null);
      if (base == null) {
        return links;
      }
      link = TableFile.read(fs, locate(fs, link.file(), base), tables.shard(), null);
    }
  }

  /**
   * The base's file: where it was saved, else beside this one (a checkpoint folder copied whole); in
   * the format of the file that builds on it (a save's file, or one of the tables alone).
   */
  private Path locate(FileSystem fs, Path from, String baseDir) throws IOException {
    boolean legacy = from.getName().endsWith(".tables");
    Path saved = legacy ? legacyFile(baseDir, tables.shard()) : Snapshots.file(baseDir, tables.shard());
    if (fs.exists(saved)) {
      return saved;
    }
    Path beside = new Path(new Path(from.getParent().getParent(), new Path(baseDir).getName()), saved.getName());
    if (fs.exists(beside)) {
      return beside;
    }
    throw PsError.notFound(from + " holds only what changed since the save in " + baseDir + ", and neither " + saved
        + " nor " + beside + " exists: restore a checkpoint whose chain of saves is whole (keep the checkpoints a "
        + "kept one builds on)");
  }
}
