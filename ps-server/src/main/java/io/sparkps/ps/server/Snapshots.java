package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.ProtoConvert;
import io.sparkps.ps.wire.PsError;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;


/**
 * Saves and restores one ps to a Hadoop file system path: its variables (values, optimizer state,
 * versions, SSP clocks) and its embedding tables, one file per save, {@code ps-NNNNN.snapshot}. A
 * save writes a temporary file and renames it over the final one, so a reader sees either the
 * previous save or the new one, never a partial file.
 *
 * <p>The file (format 3, {@link #MAGIC}): a head (magic, ps index), the tables ({@link TableFile};
 * each whole, or only what changed since this ps's previous save, naming the directory of the save
 * it builds on: {@link TableSnapshots}), the SHA-256 of the head and tables (so a read of the tables
 * alone stops there), then the variables (groups with their clocks, then each slice, always whole),
 * then the SHA-256 of all that as a 32-byte trailer: the file's digest, which a checkpoint's marker
 * records. So one chain of saves
 * serves both: a restore reads its own file for the variables and follows its tables' deltas back
 * through earlier saves' files to their full saves. Each slice is saved under its lock, so it is
 * consistent in itself; in-flight SYNC sums are not saved: their workers push them again. A restore
 * reads and checks every file it needs before it replaces anything; do it before training resumes,
 * not during. Saves of the formats before (version 1 and 2 of the variables' file, beside a {@code
 * ps-NNNNN.tables} file of the tables) are still read.
 */
@Internal
public final class Snapshots {
  /** The magic of a save's file, format 3: tables and variables in one file, a SHA-256 trailer. */
  static final String MAGIC = "SPARKPS-SHARD-SNAPSHOT-3";
  /** Version 2 records each slice's {@code stateSince}; version 1 files (without it) still read, as 0. */
  private static final String MAGIC_2 = "SPARKPS-SHARD-SNAPSHOT-2";
  private static final String MAGIC_1 = "SPARKPS-SHARD-SNAPSHOT-1";
  /** Saves of a table per full save: the first full, then up to {@code FULL_EVERY - 1} deltas. */
  public static final int FULL_EVERY = 8;
  private final ShardStore store;
  private final TableSnapshots tables;

  /** Snapshots of {@code store} and {@code tables}, this ps's variables and embedding tables. */
  public Snapshots(ShardStore store, EmbeddingTables tables) {
    if (tables.shard() != store.shardIndex) {
      throw new IllegalArgumentException("the tables of ps " + tables.shard() + " with the variables of ps "
          + store.shardIndex);
    }
    this.store = store;
    this.tables = new TableSnapshots(tables);
  }

  /** The file of ps {@code shard}'s saves below a directory. */
  public static Path file(String dir, int shard) {
    return new Path(dir, String.format("ps-%05d.snapshot", shard));
  }

  /**
   * The file that holds ps {@code shard}'s embedding tables below {@code dir}: its save's, or, in a
   * save of the format before, the tables' own file.
   */
  public static Path tablesFile(FileSystem fs, String dir, int shard) throws IOException {
    Path legacy = TableSnapshots.legacyFile(dir, shard);
    return fs.exists(legacy) ? legacy : file(dir, shard);
  }

  /** Writes this ps's save below {@code dir}. */
  public SnapshotReply save(String dir) throws IOException {
    return save(dir, false);
  }

  /**
   * Writes this ps's save below {@code dir}; {@code whole}: every table whole, apart from the
   * checkpoints' chain (an export: the next save still builds on the previous one, not on this).
   */
  public SnapshotReply save(String dir, boolean whole) throws IOException {
    return saveWithTables(dir, whole).reply();
  }

  /** What a save wrote: the reply, and its tables one by one. */
  record Saved(SnapshotReply reply, TableSnapshots.Result tables) {}

  Saved saveWithTables(String dir, boolean whole) throws IOException {
    Path target = file(dir, store.shardIndex);
    Configuration conf = new Configuration();
    FileSystem fs = target.getFileSystem(conf);
    fs.mkdirs(target.getParent());
    Path tmp = new Path(target.getParent(), "." + target.getName() + ".tmp-" + UUID.randomUUID());
    synchronized (tables) {
      TableSnapshots.Save tableSave = null;
      int count;
      byte[] digest;
      try {
        MessageDigest sha = sha256();
        // Buffered above the digest: it and the file system see large writes, not one per byte.
        try (DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(
            new DigestOutputStream(fs.create(tmp, false), sha), 1 << 16))) {
          out.writeUTF(MAGIC);
          out.writeInt(store.shardIndex);
          tableSave = tables.write(out, dir, whole);
          out.flush();
          out.write(TableFile.digestSoFar(sha)); // the tables' own digest: a read of them stops here
          count = writeVariables(out);
          out.flush();
          digest = sha.digest();
          out.write(digest); // the trailer: not part of what it digests
        }
        FileContext.getFileContext(target.toUri(), conf).rename(tmp, target, Options.Rename.OVERWRITE);
      } catch (IOException | RuntimeException e) {
        if (tableSave != null) {
          tableSave.abort();
        }
        try {
          fs.delete(tmp, false);
        } catch (IOException cleanup) {
          e.addSuppressed(cleanup);
        }
        throw e;
      }
      TableSnapshots.Result saved = tableSave.commit(target.getName());
      // The save is in place. A tables file of the format before in its directory would be read in place of
      // this save's tables: it goes.
      fs.delete(TableSnapshots.legacyFile(dir, store.shardIndex), false);
      SnapshotReply reply = SnapshotReply.newBuilder().setVariables(count).setBytes(fs.getFileStatus(target).getLen())
          .setSha256(hex(digest)).setFile(target.getName()).build();
      return new Saved(saved.tables().isEmpty() ? reply : withTables(reply, saved), saved);
    }
  }

  private int writeVariables(DataOutputStream out) throws IOException {
    out.writeInt(store.groups().size());
    for (GroupState g : store.groups()) {
      writeBytes(out, g.spec.toByteArray());
      long[] clocks = g.clocks();
      out.writeInt(clocks.length);
      for (long c : clocks) {
        out.writeLong(c);
      }
    }
    int count = 0;
    out.writeInt(store.slices().size());
    for (VariableSlice s : store.slices()) {
      writeSlice(out, s);
      count++;
    }
    return count;
  }

  static SnapshotReply withTables(SnapshotReply variables, TableSnapshots.Result tables) {
    return variables.toBuilder().setTables(tables.tables().size()).setTablesFile(tables.file())
        .setTablesBytes(tables.bytes()).setTableRows(tables.tables().stream().mapToLong(TableSnapshots.TableInfo::rows)
            .sum())
        .setTablesIncremental(tables.tables().stream().anyMatch(TableSnapshots.TableInfo::delta))
        .addAllTablesNeeds(tables.needs()).build();
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }

  static String hex(byte[] bytes) {
    StringBuilder b = new StringBuilder(bytes.length * 2);
    for (byte x : bytes) {
      b.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return b.toString();
  }

  private static void writeSlice(DataOutputStream out, VariableSlice s) throws IOException {
    s.lock.lock();
    try {
      writeBytes(out, VariableInfoProto.newBuilder().setSpec(s.spec).setRowStart(s.rowStart)
          .setRowEnd(s.rowEnd).setVersion(s.version).setInitialized(s.initialized).build().toByteArray());
      out.writeLong(s.iteration);
      out.writeLong(s.rule.stateSince());
      float[][] state = s.rule.state();
      out.writeInt(state.length);
      writeFloats(out, s.values);
      for (float[] st : state) {
        writeFloats(out, st);
      }
    } finally {
      s.lock.unlock();
    }
  }

  /** Replaces this ps's variables and tables with the save below {@code dir}: {@link #restore(SnapshotRequest)}. */
  public SnapshotReply restore(String dir) throws IOException {
    return restore(SnapshotRequest.newBuilder().setPath(dir).build());
  }

  /**
   * Replaces this ps's state with the save below the request's path, all or nothing: its file is
   * checked (its size and SHA-256 against what the request expects, then read whole), and so is every
   * earlier save its tables build on, before anything is replaced; a damaged or missing file is
   * refused with a message that names it. With {@code verify_only} nothing is replaced; with {@code
   * tables_only} only the tables, and only when none holds a row (a replaced ps's refill: the first
   * wins, and a later one is told what the first put in place).
   */
  public SnapshotReply restore(SnapshotRequest request) throws IOException {
    Path source = file(request.getPath(), store.shardIndex);
    FileSystem fs = source.getFileSystem(new Configuration());
    boolean exists = fs.exists(source);
    if (!exists && !request.getTablesOnly()) {
      throw PsError.notFound("no snapshot of ps " + store.shardIndex + " at " + source
          + ": was it saved with the same number of ps shards?");
    }
    long bytes = exists ? fs.getFileStatus(source).getLen() : 0;
    if (exists && request.getExpectedBytes() > 0 && bytes != request.getExpectedBytes()) {
      throw PsError.invalid(source + " is damaged: it has " + bytes + " bytes, the checkpoint's marker says "
          + request.getExpectedBytes() + " (truncated or overwritten)");
    }
    Variables variables = null;
    TableSnapshots.Read read = null;
    String digest = "";
    if (exists && MAGIC.equals(magic(fs, source))) {
      // A refill of the tables alone reads the variables only to check the digest it was given.
      boolean whole = !request.getTablesOnly() || !request.getExpectedSha256().isEmpty();
      TableFile.Link link = TableFile.read(fs, source, store.shardIndex, whole ? this::readVariables : null);
      digest = whole ? link.sha256() : "";
      checkDigest(request, source, digest);
      variables = (Variables) link.variables();
      read = tables.read(fs, link);
    } else {
      if (exists && !request.getTablesOnly()) {
        variables = readLegacy(fs, source, bytes);
        digest = variables.sha256;
        checkDigest(request, source, digest);
      }
      Path legacyTables = TableSnapshots.legacyFile(request.getPath(), store.shardIndex);
      if (fs.exists(legacyTables)) {
        read = tables.read(fs, TableFile.read(fs, legacyTables, store.shardIndex, null));
      }
    }
    if (request.getTablesOnly()) {
      boolean refilled = read != null && !request.getVerifyOnly() && read.commitIfEmpty();
      // A refill that comes second is told what the first put in place: a worker whose tables
      // refill lost the race may still be the one that reports the replacement's refill.
      TableSnapshots.Result told = refilled ? read.result() : request.getVerifyOnly() ? null : tables.placed();
      return told == null ? SnapshotReply.getDefaultInstance() : withTables(SnapshotReply.getDefaultInstance(), told);
    }
    if (!request.getVerifyOnly()) {
      variables.groups.forEach(store::putGroup);
      variables.slices.forEach(store::put);
      store.waiters.signal();
      if (read != null) {
        read.commit();
      }
    }
    SnapshotReply reply = SnapshotReply.newBuilder().setVariables(variables.slices.size()).setBytes(bytes)
        .setSha256(digest).setFile(source.getName()).build();
    return read == null ? reply : withTables(reply, read.result());
  }

  private static String magic(FileSystem fs, Path file) throws IOException {
    try (DataInputStream in = new DataInputStream(fs.open(file))) {
      return in.readUTF();
    } catch (EOFException | java.io.UTFDataFormatException e) {
      throw PsError.invalid(file + " is damaged: it does not begin as a SparkPS snapshot (truncated)");
    } catch (org.apache.hadoop.fs.ChecksumException e) {
      throw PsError.invalid(file + " is damaged: " + e.getMessage());
    }
  }

  private static void checkDigest(SnapshotRequest request, Path source, String digest) {
    if (!request.getExpectedSha256().isEmpty() && !request.getExpectedSha256().equals(digest)) {
      throw PsError.invalid(source + " is damaged: its SHA-256 is " + digest + ", the checkpoint's marker says "
          + request.getExpectedSha256());
    }
  }

  /** A save's variables, read and not yet in place. */
  private record Variables(List<GroupState> groups, List<VariableSlice> slices, String sha256) {}

  private Variables readVariables(DataInputStream in, long fileBytes) throws IOException {
    return readVariables(in, fileBytes, true, null);
  }

  private Variables readVariables(DataInputStream in, long bytes, boolean withStateSince, String sha256)
      throws IOException {
    // Every size read from the file is checked before anything of that size is allocated.
    List<GroupState> groups = new ArrayList<>();
    int groupCount = in.readInt();
    for (int i = 0; i < groupCount; i++) {
      GroupSpec spec = GroupSpec.parseFrom(readBytes(in, bytes));
      store.limits.check(spec);
      GroupState g = new GroupState(spec);
      int clockCount = in.readInt();
      if (clockCount < 0 || clockCount > spec.getNumWorkers()) {
        throw new IOException("group '" + spec.getName() + "' has " + clockCount + " clocks for "
            + spec.getNumWorkers() + " workers");
      }
      long[] clocks = new long[clockCount];
      for (int c = 0; c < clocks.length; c++) {
        clocks[c] = in.readLong();
      }
      g.restoreClocks(clocks);
      groups.add(g);
    }
    List<VariableSlice> slices = new ArrayList<>();
    int sliceCount = in.readInt();
    for (int i = 0; i < sliceCount; i++) {
      slices.add(readSlice(in, bytes, withStateSince));
    }
    return new Variables(groups, slices, sha256);
  }

  /** A save of the formats before: the variables alone, its SHA-256 that of the whole file. */
  private Variables readLegacy(FileSystem fs, Path source, long bytes) throws IOException {
    MessageDigest sha = sha256();
    Variables read;
    try (DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(
        new DigestInputStream(fs.open(source), sha), 1 << 16))) {
      String magic = in.readUTF();
      if (!MAGIC_2.equals(magic) && !MAGIC_1.equals(magic)) {
        throw PsError.invalid(source + " is not a SparkPS shard snapshot");
      }
      int shard = in.readInt();
      if (shard != store.shardIndex) {
        throw PsError.invalid(source + " holds ps " + shard + ", not ps " + store.shardIndex);
      }
      read = readVariables(in, bytes, MAGIC_2.equals(magic), null);
      if (in.read() != -1) {
        throw PsError.invalid(source + " is damaged: it goes on after its last variable");
      }
    } catch (EOFException e) {
      throw PsError.invalid(source + " is damaged: it ends before its last variable (truncated)");
    } catch (IOException | RuntimeException e) {
      if (e instanceof PsError) {
        throw e;
      }
      throw PsError.invalid(source + " is damaged: " + e.getMessage());
    }
    return new Variables(read.groups, read.slices, hex(sha.digest()));
  }

  private VariableSlice readSlice(DataInputStream in, long fileBytes, boolean withStateSince) throws IOException {
    VariableInfoProto info = VariableInfoProto.parseFrom(readBytes(in, fileBytes));
    long elements = store.limits.check(io.sparkps.ps.grpc.proto.SliceDecl.newBuilder().setSpec(info.getSpec())
        .setRowStart(info.getRowStart()).setRowEnd(info.getRowEnd()).build(), store.shardIndex);
    if (4 * elements > fileBytes) {
      throw new IOException("variable '" + info.getSpec().getName() + "' would hold " + elements
          + " values, more than the file's " + fileBytes + " bytes can");
    }
    VariableSlice s = new VariableSlice(info.getSpec(), ProtoConvert.fromProto(info.getSpec().getOptimizer()),
        info.getRowStart(), info.getRowEnd());
    s.version = info.getVersion();
    s.initialized = info.getInitialized();
    s.iteration = in.readLong();
    if (withStateSince) {
      s.rule.stateSince(in.readLong());
    }
    int states = in.readInt();
    float[][] state = s.rule.state();
    if (states != state.length) {
      throw new IOException("snapshot of '" + s.name + "' has " + states + " optimizer states, expected " + state.length);
    }
    readFloats(in, s.values);
    for (float[] st : state) {
      readFloats(in, st);
    }
    return s;
  }

  private static void writeBytes(DataOutputStream out, byte[] bytes) throws IOException {
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  private static byte[] readBytes(DataInputStream in, long fileBytes) throws IOException {
    int length = in.readInt();
    if (length < 0 || length > fileBytes) {
      throw new IOException("a block of " + length + " bytes in a file of " + fileBytes);
    }
    byte[] bytes = new byte[length];
    in.readFully(bytes);
    return bytes;
  }

  private static void writeFloats(DataOutputStream out, float[] values) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    for (int off = 0; off < values.length; ) {
      int n = Math.min(values.length - off, buf.capacity() / 4);
      buf.clear();
      buf.asFloatBuffer().put(values, off, n);
      out.write(buf.array(), 0, n * 4);
      off += n;
    }
  }

  private static void readFloats(DataInputStream in, float[] values) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    for (int off = 0; off < values.length; ) {
      int n = Math.min(values.length - off, buf.capacity() / 4);
      in.readFully(buf.array(), 0, n * 4);
      buf.clear();
      buf.asFloatBuffer().get(values, off, n);
      off += n;
    }
  }
}
