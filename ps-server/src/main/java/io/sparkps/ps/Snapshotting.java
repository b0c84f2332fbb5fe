package io.sparkps.ps;

import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.SnapshotReply;
import io.sparkps.ps.grpc.proto.SnapshotRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** The snapshot calls of {@link PsClient}: every shard saves, checks or restores its own file. */
final class Snapshotting {
  private Snapshotting() {}

  static List<ShardSnapshot> save(List<ShardStub> shards, String dir, Duration callTimeout) {
    List<SnapshotReply> replies = Calls.all(shards, "save to " + dir, s -> s.snapshot(dir), callTimeout,
        Calls.Recoverer.NONE);
    List<ShardSnapshot> saved = new ArrayList<>();
    for (int i = 0; i < replies.size(); i++) {
      saved.add(new ShardSnapshot(i, replies.get(i).getFile(), replies.get(i).getBytes(), replies.get(i).getSha256()));
    }
    return saved;
  }

  static void restore(List<ShardStub> shards, String dir, List<ShardSnapshot> expected, boolean verifyOnly,
      Duration callTimeout) {
    Calls.all(shards, (verifyOnly ? "check the snapshot in " : "restore from ") + dir, s -> {
      SnapshotRequest.Builder r = SnapshotRequest.newBuilder().setPath(dir).setVerifyOnly(verifyOnly);
      expected.stream().filter(e -> e.shard() == s.index()).findFirst()
          .ifPresent(e -> r.setExpectedBytes(e.bytes()).setExpectedSha256(e.sha256()));
      return s.restore(r.build());
    }, callTimeout, Calls.Recoverer.NONE);
  }
}
