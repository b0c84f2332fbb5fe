package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.EmbeddingSpecProto;
import io.sparkps.ps.wire.PsError;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The tables' part of a ps's save ({@link Snapshots}' file, format 3) and the files of the format
 * before it, which held the tables alone ({@code ps-NNNNN.tables}, still read): a head (magic, ps
 * index), the table count, then per table its spec, whether it is a delta and the directory of the
 * save it builds on, the ids evicted since that save, and its rows (id, update count, last step,
 * values, optimizer state; the default row has id {@link Long#MIN_VALUE}); in a save's file, the
 * SHA-256 of the head and tables, then the ps's variables ({@link Snapshots}); then the SHA-256 of
 * all that, as a 32-byte trailer.
 * Every size read is checked against the file's length before anything of that size is allocated.
 */
final class TableFile {
  /** The magic of a file of the tables alone, the format before {@link Snapshots#MAGIC}. */
  static final String MAGIC = "SPARKPS-TABLES-1";

  private TableFile() {}

  static void writeHead(DataOutputStream out, int shard) throws IOException {
    out.writeUTF(MAGIC);
    out.writeInt(shard);
  }

  /** Writes table {@code t}: whole, or with {@code baseDir} only what changed since the save there. */
  static TableSnapshots.TableInfo writeTable(DataOutputStream out, EmbeddingTables.Table t, String baseDir)
      throws IOException {
    EmbeddingShard rows = t.rows();
    byte[] spec = t.spec().toByteArray();
    out.writeInt(spec.length);
    out.write(spec);
    out.writeBoolean(baseDir != null);
    out.writeUTF(baseDir == null ? "" : baseDir);
    long[] evicted = baseDir == null ? new long[0] : rows.evictedSinceCheckpoint();
    out.writeInt(evicted.length);
    for (long id : evicted) {
      out.writeLong(id);
    }
    int[] count = {0};
    rows.forEachRow(baseDir != null, (id, r, ro, state, so, updates, touched) -> count[0]++);
    out.writeInt(count[0]);
    IOException[] failed = {null};
    java.nio.ByteBuffer row = java.nio.ByteBuffer.allocate(20 + 4 * (rows.dim() + rows.stateWidth()));
    rows.forEachRow(baseDir != null, (id, r, ro, state, so, updates, touched) -> {
      try {
        row.clear();
        row.putLong(id).putInt(updates).putLong(touched);
        row.asFloatBuffer().put(r, ro, rows.dim()).put(state, so, rows.stateWidth());
        out.write(row.array(), 0, row.capacity());
      } catch (IOException e) {
        if (failed[0] == null) {
          failed[0] = e;
        }
      }
    });
    if (failed[0] != null) {
      throw failed[0];
    }
    return new TableSnapshots.TableInfo(t.spec().getName(), baseDir != null, count[0], evicted.length);
  }

  /**
   * One file of a chain: the tables it holds, its SHA-256 (hex; what its trailer says and its bytes
   * before the trailer digest to), and what {@code variables} read of a save's variables (null when
   * none were read: a file of the tables alone, or a save read for its tables only).
   */
  record Link(Path file, List<Part> parts, String sha256, Object variables) {}

  /** Reads a save's variables, which follow its tables. */
  interface VariablesReader {
    Object read(DataInputStream in, long fileBytes) throws IOException;
  }

  /**
   * Reads and checks one file of ps {@code shard}: a save's ({@link Snapshots#MAGIC}), whose
   * variables {@code variables} reads (null: they are only digested), or a file of the tables alone.
   */
  static Link read(FileSystem fs, Path file, int shard, VariablesReader variables) throws IOException {
    long bytes = fs.getFileStatus(file).getLen();
    check(bytes > 32, file, bytes + " bytes");
    MessageDigest sha = Snapshots.sha256();
    List<Part> parts = new ArrayList<>();
    Object read = null;
    try (java.io.InputStream raw = fs.open(file)) {
      // The digest sees exactly the bytes read, so that a save's tables can be checked where they end.
      DataInputStream in = new DataInputStream(new DigestInputStream(new java.io.BufferedInputStream(
          new Limited(raw, bytes - 32), 1 << 16), sha));
      boolean save = head(in, file, shard);
      int count = in.readInt();
      check(count >= 0 && count <= bytes, file, "a table count of " + count);
      for (int i = 0; i < count; i++) {
        parts.add(Part.read(in, bytes, file));
      }
      if (save) {
        checkTables(in, sha, file);
        if (variables == null) {
          return new Link(file, parts, null, null);
        }
        read = variables.read(in, bytes);
      }
      check(in.read() == -1, file, "bytes after its last " + (save ? "variable" : "table"));
      byte[] digest = sha.digest();
      if (!Arrays.equals(digest, raw.readNBytes(32))) {
        throw PsError.invalid(file + " is damaged: its SHA-256 does not match its trailer (truncated or overwritten)");
      }
      return new Link(file, parts, Snapshots.hex(digest), read);
    } catch (EOFException e) {
      throw PsError.invalid(file + " is damaged: it ends before its last table or variable (truncated)");
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw PsError.invalid(file + " is damaged: a table's or variable's spec does not parse");
    } catch (org.apache.hadoop.fs.ChecksumException e) {
      throw PsError.invalid(file + " is damaged: " + e.getMessage());
    } catch (IOException | RuntimeException e) {
      if (e instanceof PsError) {
        throw e;
      }
      throw PsError.invalid(file + " is damaged: " + e.getMessage());
    }
  }

  /**
   * Checks the SHA-256 of a save's head and tables, which follows them: a read of its tables alone
   * needs to read no further. {@code sha} has digested exactly the bytes before.
   */
  static void checkTables(DataInputStream in, MessageDigest sha, Path file) throws IOException {
    byte[] expected = digestSoFar(sha);
    byte[] written = new byte[32];
    in.readFully(written);
    if (!Arrays.equals(expected, written)) {
      throw PsError.invalid(file + " is damaged: its tables' SHA-256 does not match what follows them (truncated or "
          + "overwritten)");
    }
  }

  /** The digest of what {@code sha} has seen so far; it goes on digesting. */
  static byte[] digestSoFar(MessageDigest sha) {
    try {
      return ((MessageDigest) sha.clone()).digest();
    } catch (CloneNotSupportedException e) {
      throw new IllegalStateException("this JVM's SHA-256 cannot be copied", e);
    }
  }

  /**
   * Reads a file's head (magic and ps index), checking it holds ps {@code shard}; whether it is a
   * save's file ({@link Snapshots#MAGIC}: its variables follow its tables) or holds tables alone.
   */
  static boolean head(DataInputStream in, Path file, int shard) throws IOException {
    String magic = in.readUTF();
    if (!Snapshots.MAGIC.equals(magic) && !MAGIC.equals(magic)) {
      throw PsError.invalid(file + " is not a SparkPS checkpoint of embedding tables");
    }
    int held = in.readInt();
    if (held != shard) {
      throw PsError.invalid(file + " holds the tables of ps " + held + ", not of ps " + shard);
    }
    return Snapshots.MAGIC.equals(magic);
  }

  /** The first {@code left} bytes of a stream (the file without its trailer); never closes it. */
  static final class Limited extends java.io.FilterInputStream {
    private long left;

    Limited(java.io.InputStream in, long left) {
      super(in);
      this.left = left;
    }

    @Override
    public int read() throws IOException {
      if (left <= 0) {
        return -1;
      }
      int b = in.read();
      if (b >= 0) {
        left--;
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (left <= 0) {
        return -1;
      }
      int n = in.read(b, off, (int) Math.min(len, left));
      if (n > 0) {
        left -= n;
      }
      return n;
    }

    @Override
    public void close() {
      // the caller closes the stream under it
    }
  }

  /** One table of one file: rows and state held in arrays, applied to a shard's rows in order. */
  record Part(EmbeddingSpecProto spec, boolean delta, String base, long[] evicted, long[] ids, int[] updates,
      long[] touched, float[] rows, float[] states, int dim, int stateWidth) {
    int rowCount() {
      return ids.length;
    }

    static Part read(DataInputStream in, long bytes, Path file) throws IOException {
      int specLength = in.readInt();
      check(specLength >= 0 && specLength <= bytes, file, "a spec of " + specLength + " bytes");
      byte[] specBytes = new byte[specLength];
      in.readFully(specBytes);
      EmbeddingSpecProto spec = EmbeddingSpecProto.parseFrom(specBytes);
      boolean delta = in.readBoolean();
      String base = in.readUTF();
      int evictedCount = in.readInt();
      check(evictedCount >= 0 && 8L * evictedCount <= bytes, file, evictedCount + " evicted ids");
      long[] evicted = new long[evictedCount];
      for (int k = 0; k < evictedCount; k++) {
        evicted[k] = in.readLong();
      }
      int dim = spec.getDim();
      int stateWidth = EmbeddingTables.rule(spec).stateWidth(dim);
      int count = in.readInt();
      long rowBytes = 20L + 4L * (dim + stateWidth);
      check(dim >= 1 && count >= 0 && count * rowBytes <= bytes, file, count + " rows of dim " + dim);
      long[] ids = new long[count];
      int[] updates = new int[count];
      long[] touched = new long[count];
      float[] rows = new float[count * dim];
      float[] states = new float[count * stateWidth];
      java.nio.ByteBuffer row = java.nio.ByteBuffer.allocate((int) rowBytes);
      for (int k = 0; k < count; k++) {
        in.readFully(row.array());
        row.clear();
        ids[k] = row.getLong();
        updates[k] = row.getInt();
        touched[k] = row.getLong();
        row.asFloatBuffer().get(rows, k * dim, dim).get(states, k * stateWidth, stateWidth);
      }
      return new Part(spec, delta, base, evicted, ids, updates, touched, rows, states, dim, stateWidth);
    }

    void applyTo(EmbeddingShard shard) {
      for (long id : evicted) {
        shard.removeRow(id);
      }
      for (int k = 0; k < ids.length; k++) {
        shard.restoreRow(ids[k], rows, k * dim, states, k * stateWidth, updates[k], touched[k]);
      }
    }
  }

  static void check(boolean ok, Path file, String what) {
    if (!ok) {
      throw PsError.invalid(file + " is damaged: " + what);
    }
  }
}
