package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PsError;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * Reads the tables of an export ({@link Snapshots#save(String, boolean)} with every table whole) row
 * by row, without holding them: what scoring a model whose tables are larger than one JVM reads. The
 * file is a save's ({@link Snapshots}), whose tables come first, or a tables file of the format
 * before; a delta (a checkpoint's, not an export's) is refused.
 */
@Internal
public final class ExportedRows {
  private ExportedRows() {}

  /**
   * Opens ps {@code shard}'s tables file below {@code dir} to read it row by row, the default rows
   * (id {@link Long#MIN_VALUE}) too. The file's SHA-256 is checked at its end: on a damaged file
   * the last {@link Cursor#next} fails, after the rows before the damage were read.
   */
  public static Cursor open(String dir, int shard) throws IOException {
    Path file = new Path(dir);
    return new Cursor(Snapshots.tablesFile(file.getFileSystem(new Configuration()), dir, shard), shard);
  }

  /** A tables file read one row at a time; {@link #values()} is reused from row to row. */
  public static final class Cursor implements AutoCloseable {
    private final Path file;
    private final long bytes;
    private final FSDataInputStream raw;
    private final MessageDigest sha = Snapshots.sha256();
    private final DataInputStream in;
    private int tablesLeft;
    private Table table;
    private int rowsLeft;
    private byte[] row;
    private java.nio.ByteBuffer buffer;
    private float[] values;
    private long id;
    private boolean finished;
    private final boolean save;

    private Cursor(Path file, int shard) throws IOException {
      this.file = file;
      FileSystem fs = file.getFileSystem(new Configuration());
      this.bytes = fs.getFileStatus(file).getLen();
      TableFile.check(bytes > 32, file, bytes + " bytes");
      this.raw = fs.open(file);
      try {
        // The digest sees exactly the bytes read, so that a save's tables can be checked where they end.
        this.in = new DataInputStream(new DigestInputStream(new java.io.BufferedInputStream(
            new TableFile.Limited(raw, bytes - 32), 1 << 16), sha));
        this.save = TableFile.head(in, file, shard);
        this.tablesLeft = count(in, file, bytes);
      } catch (EOFException e) {
        raw.close();
        throw PsError.invalid(file + " is damaged: it ends before its first table");
      } catch (IOException | RuntimeException e) {
        raw.close();
        throw e;
      }
    }

    /** Moves to the next row; false at the file's end, once its SHA-256 is checked. */
    public boolean next() throws IOException {
      try {
        while (rowsLeft == 0) {
          if (tablesLeft == 0) {
            if (!finished) {
              finish();
            }
            return false;
          }
          tablesLeft--;
          table = Table.read(in, file, bytes);
          rowsLeft = table.count();
          row = new byte[table.rowBytes()];
          buffer = java.nio.ByteBuffer.wrap(row);
          values = new float[table.dim()];
        }
        in.readFully(row);
        rowsLeft--;
        id = buffer.getLong(0);
        buffer.position(20);
        buffer.asFloatBuffer().get(values, 0, table.dim());
        return true;
      } catch (EOFException e) {
        throw PsError.invalid(file + " is damaged: it ends before its last table");
      }
    }

    private void finish() throws IOException {
      finished = true;
      if (save) {
        TableFile.checkTables(in, sha, file); // the save's variables follow: not needed here
        return;
      }
      TableFile.check(in.read() == -1, file, "bytes after its last table");
      if (!Arrays.equals(sha.digest(), raw.readNBytes(32))) {
        throw PsError.invalid(file + " is damaged: its SHA-256 does not match its trailer (truncated or overwritten)");
      }
    }

    /** The current row's table. */
    public String table() {
      return table.name();
    }

    /** The current row's id ({@link Long#MIN_VALUE}: the table's default row on this ps). */
    public long id() {
      return id;
    }

    /** The current row's values, as many as its table's dim. */
    public float[] values() {
      return values;
    }

    @Override
    public void close() throws IOException {
      raw.close();
    }
  }

  /**
   * The default row of each of ps {@code shard}'s tables below {@code dir} (what an id the ps does
   * not hold reads), by table name. Reads each table's head and first row and seeks past the rest,
   * so it costs little whatever the tables' size; it does not check the file's SHA-256
   * (reading every row with {@link #open} does, at the end).
   */
  public static Map<String, float[]> defaults(String dir, int shard) throws IOException {
    FileSystem fs = new Path(dir).getFileSystem(new Configuration());
    Path file = Snapshots.tablesFile(fs, dir, shard);
    long bytes = fs.getFileStatus(file).getLen();
    TableFile.check(bytes > 32, file, bytes + " bytes");
    Map<String, float[]> out = new LinkedHashMap<>();
    try (FSDataInputStream in = fs.open(file)) {
      TableFile.head(in, file, shard);
      int tables = count(in, file, bytes);
      for (int i = 0; i < tables; i++) {
        Table t = Table.read(in, file, bytes);
        TableFile.check(t.count() >= 1, file, "table '" + t.name() + "' without its default row");
        long rest = in.getPos() + (long) t.count() * t.rowBytes();
        TableFile.check(rest <= bytes - 32, file, t.count() + " rows of table '" + t.name() + "' past its end");
        TableFile.check(in.readLong() == Long.MIN_VALUE, file, "table '" + t.name() + "' not starting with its "
            + "default row");
        in.readInt();
        in.readLong();
        float[] row = new float[t.dim()];
        for (int d = 0; d < row.length; d++) {
          row[d] = in.readFloat();
        }
        out.put(t.name(), row);
        in.seek(rest);
      }
    } catch (EOFException e) {
      throw PsError.invalid(file + " is damaged: it ends before its last table");
    }
    return out;
  }

  private static int count(DataInputStream in, Path file, long bytes) throws IOException {
    int count = in.readInt();
    TableFile.check(count >= 0 && count <= bytes, file, "a table count of " + count);
    return count;
  }

  /** A table's head in the file: its name, dim, row count and the bytes of one row with its state. */
  private record Table(String name, int dim, int count, int rowBytes) {
    static Table read(DataInputStream in, Path file, long bytes) throws IOException {
      int specLength = in.readInt();
      TableFile.check(specLength >= 0 && specLength <= bytes, file, "a spec of " + specLength + " bytes");
      EmbeddingSpecProto spec;
      try {
        spec = EmbeddingSpecProto.parseFrom(in.readNBytes(specLength));
      } catch (com.google.protobuf.InvalidProtocolBufferException e) {
        throw PsError.invalid(file + " is damaged: a table's spec does not parse");
      }
      if (in.readBoolean()) {
        throw PsError.invalid(file + " holds only the changes of table '" + spec.getName() + "' since an earlier "
            + "save (a checkpoint's delta): read an export, whose tables are whole");
      }
      in.readUTF();
      int evicted = in.readInt();
      TableFile.check(evicted >= 0 && 8L * evicted <= bytes, file, evicted + " evicted ids");
      in.skipNBytes(8L * evicted);
      int dim = spec.getDim();
      long rowBytes = 20L + 4L * (dim + EmbeddingTables.rule(spec).stateWidth(dim));
      int count = in.readInt();
      TableFile.check(dim >= 1 && count >= 0 && count * rowBytes <= bytes, file, count + " rows of dim " + dim);
      return new Table(spec.getName(), dim, count, (int) rowBytes);
    }
  }
}
