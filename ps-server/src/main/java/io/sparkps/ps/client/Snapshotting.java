package io.sparkps.ps.client;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.ShardSnapshot;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The snapshot calls of {@link PsClient}: every shard saves, checks or restores its own file.
 * Their deadline grows with the largest shard (values and up to two optimizer states per value,
 * at a slow file system's {@value #BYTES_PER_SECOND} bytes a second): a large shard is never cut
 * off by the deadline of an ordinary call.
 */
final class Snapshotting {
  /** The slowest write or read rate a snapshot's deadline allows for (8 MiB/s). */
  static final long BYTES_PER_SECOND = 8L << 20;

  private Snapshotting() {}

  /** An ordinary call's {@code callTimeout} plus the time the largest of {@code loadBytes} takes at the slowest rate. */
  static Duration bound(Duration callTimeout, long[] loadBytes) {
    long largest = 0;
    for (long b : loadBytes) {
      largest = Math.max(largest, b);
    }
    return callTimeout.plusMillis(3 * largest * 1000 / BYTES_PER_SECOND);
  }

  static List<ShardSnapshot> save(List<ShardStub> shards, String dir, boolean whole, Duration bound) {
    List<SnapshotReply> replies = Calls.all(shards, (whole ? "export to " : "save to ") + dir,
        s -> s.snapshot(dir, whole, bound), bound,
        Calls.Recoverer.NONE);
    List<ShardSnapshot> saved = new ArrayList<>();
    for (int i = 0; i < replies.size(); i++) {
      saved.add(new ShardSnapshot(i, replies.get(i).getFile(), replies.get(i).getBytes(), replies.get(i).getSha256(),
          replies.get(i).getTablesNeedsList()));
    }
    return saved;
  }

  static void restore(List<ShardStub> shards, String dir, List<ShardSnapshot> expected, boolean verifyOnly,
      Duration bound) {
    Calls.all(shards, (verifyOnly ? "check the snapshot in " : "restore from ") + dir, s -> {
      SnapshotRequest.Builder r = SnapshotRequest.newBuilder().setPath(dir).setVerifyOnly(verifyOnly);
      expected.stream().filter(e -> e.shard() == s.index()).findFirst()
          .ifPresent(e -> r.setExpectedBytes(e.bytes()).setExpectedSha256(e.sha256()));
      return s.restore(r.build(), bound);
    }, bound, Calls.Recoverer.NONE);
  }
}
