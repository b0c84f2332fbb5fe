package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.Internal;
import io.sparkps.ps.wire.PsError;
import java.io.DataOutputStream;
import java.io.IOException;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;

/**
 * Checkpoints of one ps's embedding tables, incremental: a save writes, per table, either every row
 * (a full save) or only the rows changed and the ids evicted since this ps's previous save (a
 * delta, naming the directory of the save it builds on). Every {@link #FULL_EVERY}th save of a table
 * is full, so a restore reads at most that many files, and the first save after the ps started or
 * restored from elsewhere is full. A save writes a temporary file and renames it into place.
 *
 * <p>A restore follows a delta's chain back to its full save, applies the saves in order and
 * replaces the tables: a table's rows, optimizer state, update counts and last steps come back
 * exactly. Admission counts (ids seen fewer than minCount times) are not saved: they start again.
 * Each file ends with the SHA-256 of what precedes it and is read whole, checked, before anything is
 * replaced; a damaged file or a missing link of a chain fails naming it.
 */
@Internal
public final class TableSnapshots {
  /** Saves of a table per full save: the first full, then up to {@code FULL_EVERY - 1} deltas. */
  public static final int FULL_EVERY = 8;
  private static final int MAX_CHAIN = 10_000;
  private final EmbeddingTables tables;
  /** Per table: the directory of this ps's last save of it, and the saves it builds on (its full save first). */
  private final Map<String, Saved> last = new HashMap<>();
  /** What the last restore put in place (null: none since this ps started). */
  private Result placed;

  private record Saved(String dir, List<String> needs) {}

  /** What one table's save or restore held. */
  public record TableInfo(String name, boolean delta, int rows, int evicted) {}

  /**
   * What a save wrote, or a restore read: the file, its bytes, each table, and every directory a
   * restore of it reads besides it (the saves its deltas build on, back to their full saves).
   */
  public record Result(String file, long bytes, List<TableInfo> tables, List<String> needs) {}

  /** Checkpoints of {@code tables}. */
  public TableSnapshots(EmbeddingTables tables) {
    this.tables = tables;
  }

  /** The tables' file of ps {@code shard} below a snapshot directory. */
  public static Path file(String dir, int shard) {
    return new Path(dir, String.format("ps-%05d.tables", shard));
  }

  /** Writes the tables of this ps below {@code dir}; null when it has none. */
  public Result save(String dir) throws IOException {
    return save(dir, false);
  }

  /**
   * As {@link #save(String)}; {@code whole}: every table whole, and the checkpoints' chain left as it
   * is (an export: no marks taken, the next save builds on the previous one, not on this).
   */
  public synchronized Result save(String dir, boolean whole) throws IOException {
    List<EmbeddingTables.Table> all = tables.all();
    if (all.isEmpty()) {
      return null;
    }
    Path target = file(dir, tables.shard());
    Configuration conf = new Configuration();
    FileSystem fs = target.getFileSystem(conf);
    fs.mkdirs(target.getParent());
    Path tmp = new Path(target.getParent(), "." + target.getName() + ".tmp-" + UUID.randomUUID());
    Map<String, EmbeddingShard.Marks> taken = new HashMap<>();
    List<TableInfo> infos = new ArrayList<>();
    java.util.TreeSet<String> needs = new java.util.TreeSet<>();
    Map<String, Saved> saved = new HashMap<>();
    try {
      MessageDigest sha = Snapshots.sha256();
      // Buffered above the digest: it and the file system see large writes, not one per byte.
      try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(
          new DigestOutputStream(fs.create(tmp, false), sha), 1 << 16))) {
        TableFile.writeHead(out, tables.shard());
        out.writeInt(all.size());
        for (EmbeddingTables.Table t : all) {
          Saved before = last.get(t.spec().getName());
          // A save again into the directory of the last one (a retried checkpoint) is whole: a delta
          // would name its own directory as its base.
          boolean delta = !whole && before != null && before.needs().size() + 1 < FULL_EVERY
              && !new Path(before.dir()).equals(new Path(dir));
          synchronized (t.rows()) {
            infos.add(TableFile.writeTable(out, t, delta ? before.dir() : null));
            List<String> chain = new ArrayList<>();
            if (delta) {
              chain.addAll(before.needs());
              chain.add(before.dir());
            }
            needs.addAll(chain);
            saved.put(t.spec().getName(), new Saved(dir, List.copyOf(chain)));
            if (!whole) {
              taken.put(t.spec().getName(), t.rows().takeMarks());
            }
          }
        }
        out.flush();
        out.write(sha.digest()); // the trailer: not part of what it digests
      }
      FileContext.getFileContext(target.toUri(), conf).rename(tmp, target, Options.Rename.OVERWRITE);
    } catch (IOException | RuntimeException e) {
      // Not written: what changed since the last save stays changed, for the next one.
      for (EmbeddingTables.Table t : all) {
        EmbeddingShard.Marks marks = taken.get(t.spec().getName());
        if (marks != null) {
          synchronized (t.rows()) {
            t.rows().giveBack(marks);
          }
        }
      }
      try {
        fs.delete(tmp, false);
      } catch (IOException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
    if (!whole) {
      last.putAll(saved);
    }
    return new Result(target.getName(), fs.getFileStatus(target).getLen(), infos, List.copyOf(needs));
  }

  /**
   * Reads the tables saved below {@code dir} (following each delta back to its full save) into new
   * rows, checking every file, and replaces nothing yet: {@link Read#commit()} puts them in place.
   * Null when the directory holds no tables of this ps (its tables are then left as they are).
   */
  public synchronized Read read(String dir) throws IOException {
    Path source = file(dir, tables.shard());
    FileSystem fs = source.getFileSystem(new Configuration());
    if (!fs.exists(source)) {
      return null;
    }
    Map<String, EmbeddingSpecProto> specs = new java.util.TreeMap<>();
    Map<String, EmbeddingShard> restored = new HashMap<>();
    List<TableInfo> infos = new ArrayList<>();
    for (TableFile.Link link : chain(fs, source)) {
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
        if (link.file().equals(source)) {
          infos.add(new TableInfo(name, part.delta(), part.rowCount(), part.evicted().length));
        }
      }
    }
    return new Read(new Result(source.getName(), fs.getFileStatus(source).getLen(), infos, List.of()), specs, restored);
  }

  /** Tables read from a checkpoint, not yet in place. */
  public final class Read {
    private final Result result;
    private final Map<String, EmbeddingSpecProto> specs;
    private final Map<String, EmbeddingShard> rows;

    private Read(Result result, Map<String, EmbeddingSpecProto> specs, Map<String, EmbeddingShard> rows) {
      this.result = result;
      this.specs = specs;
      this.rows = rows;
    }

    /** What was read. */
    public Result result() {
      return result;
    }

    /**
     * As {@link #commit()} when none of this ps's tables holds a row (a replaced ps's refill: the
     * first wins, a later one finds rows and leaves them); whether it did.
     */
    public boolean commitIfEmpty() {
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
    public void commit() {
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
  public synchronized Result placed() {
    return placed;
  }

  /** The files to apply, the full save first, ending with {@code source}. */
  private List<TableFile.Link> chain(FileSystem fs, Path source) throws IOException {
    List<TableFile.Link> links = new ArrayList<>();
    Path at = source;
    while (at != null) {
      if (links.size() > MAX_CHAIN) {
        throw PsError.invalid(source + " builds on more than " + MAX_CHAIN + " saves: a cycle of deltas?");
      }
      TableFile.Link link = TableFile.read(fs, at, tables.shard());
      links.add(0, link);
      String base = link.parts().stream().filter(TableFile.Part::delta).map(TableFile.Part::base).findFirst()
          .orElse(null);
      at = base == null ? null : locate(fs, at, base);
    }
    return links;
  }

  /** The base's file: where it was saved, else beside this one (a checkpoint folder copied whole). */
  private Path locate(FileSystem fs, Path from, String baseDir) throws IOException {
    Path saved = file(baseDir, tables.shard());
    if (fs.exists(saved)) {
      return saved;
    }
    Path beside = file(new Path(from.getParent().getParent(), new Path(baseDir).getName()).toString(), tables.shard());
    if (fs.exists(beside)) {
      return beside;
    }
    throw PsError.notFound(from + " holds only what changed since the save in " + baseDir + ", and neither " + saved
        + " nor " + beside + " exists: restore a checkpoint whose chain of saves is whole (keep the checkpoints a "
        + "kept one builds on)");
  }
}
