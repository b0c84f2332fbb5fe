package io.sparkps.ps.server;

import io.sparkps.ps.grpc.ProtoConvert;
import io.sparkps.ps.grpc.proto.GroupSpec;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.VariableInfoProto;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
public final class Snapshots {
  private static final String MAGIC = "SPARKPS-SHARD-SNAPSHOT-1";
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
    try (DataOutputStream out = fs.create(tmp, false)) {
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
    return SnapshotReply.newBuilder().setVariables(count).setBytes(fs.getFileStatus(target).getLen()).build();
  }

  private static void writeSlice(DataOutputStream out, VariableSlice s) throws IOException {
    s.lock.lock();
    try {
      writeBytes(out, VariableInfoProto.newBuilder().setSpec(s.spec).setRowStart(s.rowStart)
          .setRowEnd(s.rowEnd).setVersion(s.version).setInitialized(s.initialized).build().toByteArray());
      out.writeLong(s.iteration);
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

  /** Replaces this shard's state with the snapshot below {@code dir}. */
  public SnapshotReply restore(String dir) throws IOException {
    Path source = file(dir);
    FileSystem fs = source.getFileSystem(new Configuration());
    if (!fs.exists(source)) {
      throw PsError.notFound("no snapshot of ps " + store.shardIndex + " at " + source
          + ": was it saved with the same number of ps shards?");
    }
    int count = 0;
    try (DataInputStream in = fs.open(source)) {
      if (!MAGIC.equals(in.readUTF())) {
        throw PsError.invalid(source + " is not a SparkPS shard snapshot");
      }
      int shard = in.readInt();
      if (shard != store.shardIndex) {
        throw PsError.invalid(source + " holds ps " + shard + ", not ps " + store.shardIndex);
      }
      int groups = in.readInt();
      for (int i = 0; i < groups; i++) {
        GroupState g = new GroupState(GroupSpec.parseFrom(readBytes(in)));
        long[] clocks = new long[in.readInt()];
        for (int c = 0; c < clocks.length; c++) {
          clocks[c] = in.readLong();
        }
        g.restoreClocks(clocks);
        store.putGroup(g);
      }
      int slices = in.readInt();
      for (int i = 0; i < slices; i++) {
        store.put(readSlice(in));
        count++;
      }
    } catch (EOFException e) {
      throw new IOException(source + " is truncated", e);
    }
    store.waiters.signal();
    return SnapshotReply.newBuilder().setVariables(count).setBytes(fs.getFileStatus(source).getLen()).build();
  }

  private static VariableSlice readSlice(DataInputStream in) throws IOException {
    VariableInfoProto info = VariableInfoProto.parseFrom(readBytes(in));
    VariableSlice s = new VariableSlice(info.getSpec(), ProtoConvert.fromProto(info.getSpec().getOptimizer()),
        info.getRowStart(), info.getRowEnd());
    s.version = info.getVersion();
    s.initialized = info.getInitialized();
    s.iteration = in.readLong();
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

  private static byte[] readBytes(DataInputStream in) throws IOException {
    byte[] bytes = new byte[in.readInt()];
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
