package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import io.sparkps.ps.wire.Internal;
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
 * Saves and restores one shard (values, optimizer state, versions, SSP clocks) to a Hadoop file
 * system path. A save writes a temporary file and renames it over the final one, so a reader sees
 * either the previous snapshot or the new one, never a partial file. Each slice is saved under
 * its lock, so it is consistent in itself. In-flight SYNC sums are not saved: their workers push
 * them again. Restoring replaces the shard's slices; do it before training resumes, not during.
 */
@Internal
public final class Snapshots {
  /** Version 2 records each slice's {@code stateSince}; version 1 files (without it) still read, as 0. */
  private static final String MAGIC = "SPARKPS-SHARD-SNAPSHOT-2";
  private static final String MAGIC_1 = "SPARKPS-SHARD-SNAPSHOT-1";
  private final ShardStore store;

  /** Snapshots of {@code store}. */
  public Snapshots(ShardStore store) {
    this.store = store;
  }

  /** The file of this shard below a snapshot directory. */
  Path file(String dir) {
    return new Path(dir, String.format("ps-%05d.snapshot", store.shardIndex));
  }

  /** Writes this shard's snapshot below {@code dir}. */
  public SnapshotReply save(String dir) throws IOException {
    Path target = file(dir);
    Configuration conf = new Configuration();
    FileSystem fs = target.getFileSystem(conf);
    fs.mkdirs(target.getParent());
    Path tmp = new Path(target.getParent(), "." + target.getName() + ".tmp-" + UUID.randomUUID());
    int count = 0;
    MessageDigest sha = sha256();
    try (DataOutputStream out = new DataOutputStream(new DigestOutputStream(fs.create(tmp, false), sha))) {
      out.writeUTF(MAGIC);
      out.writeInt(store.shardIndex);
      out.writeInt(store.groups().size());
      for (GroupState g : store.groups()) {
        writeBytes(out, g.spec.toByteArray());
        long[] clocks = g.clocks();
        out.writeInt(clocks.length);
        for (long c : clocks) {
          out.writeLong(c);
        }
      }
      out.writeInt(store.slices().size());
      for (VariableSlice s : store.slices()) {
        writeSlice(out, s);
        count++;
      }
    } catch (IOException | RuntimeException e) {
      try {
        fs.delete(tmp, false);
      } catch (IOException cleanup) {
        e.addSuppressed(cleanup);
      }
      throw e;
    }
    FileContext.getFileContext(target.toUri(), conf).rename(tmp, target, Options.Rename.OVERWRITE);
    return SnapshotReply.newBuilder().setVariables(count).setBytes(fs.getFileStatus(target).getLen())
        .setSha256(hex(sha.digest())).setFile(target.getName()).build();
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
  }

  private static String hex(byte[] bytes) {
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

  /**
   * Replaces this shard's state with the snapshot below {@code dir}, all or nothing: the file is
   * checked (its size and SHA-256 against what the request expects, then read whole) before
   * anything is replaced; a damaged file is refused with a message that names it.
   */
  public SnapshotReply restore(String dir) throws IOException {
    return restore(io.sparkps.ps.grpc.proto.SnapshotRequest.newBuilder().setPath(dir).build());
  }

  /** {@link #restore(String)} with the request's expectations (and, with verify_only, nothing replaced). */
  public SnapshotReply restore(io.sparkps.ps.grpc.proto.SnapshotRequest request) throws IOException {
    Path source = file(request.getPath());
    FileSystem fs = source.getFileSystem(new Configuration());
    if (!fs.exists(source)) {
      throw PsError.notFound("no snapshot of ps " + store.shardIndex + " at " + source
          + ": was it saved with the same number of ps shards?");
    }
    long bytes = fs.getFileStatus(source).getLen();
    if (request.getExpectedBytes() > 0 && bytes != request.getExpectedBytes()) {
      throw PsError.invalid(source + " is damaged: it has " + bytes + " bytes, the checkpoint's marker says "
          + request.getExpectedBytes() + " (truncated or overwritten)");
    }
    List<GroupState> groups = new ArrayList<>();
    List<VariableSlice> slices = new ArrayList<>();
    MessageDigest sha = sha256();
    try (DataInputStream in = new DataInputStream(new DigestInputStream(fs.open(source), sha))) {
      String magic = in.readUTF();
      if (!MAGIC.equals(magic) && !MAGIC_1.equals(magic)) {
        throw PsError.invalid(source + " is not a SparkPS shard snapshot");
      }
      boolean withStateSince = MAGIC.equals(magic);
      int shard = in.readInt();
      if (shard != store.shardIndex) {
        throw PsError.invalid(source + " holds ps " + shard + ", not ps " + store.shardIndex);
      }
      // Every size read from the file is checked before anything of that size is allocated.
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
      int sliceCount = in.readInt();
      for (int i = 0; i < sliceCount; i++) {
        slices.add(readSlice(in, bytes, withStateSince));
      }
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
    String digest = hex(sha.digest());
    if (!request.getExpectedSha256().isEmpty() && !request.getExpectedSha256().equals(digest)) {
      throw PsError.invalid(source + " is damaged: its SHA-256 is " + digest + ", the checkpoint's marker says "
          + request.getExpectedSha256());
    }
    if (!request.getVerifyOnly()) {
      groups.forEach(store::putGroup);
      slices.forEach(store::put);
      store.waiters.signal();
    }
    return SnapshotReply.newBuilder().setVariables(slices.size()).setBytes(bytes).setSha256(digest)
        .setFile(source.getName()).build();
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
