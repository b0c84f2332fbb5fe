package io.sparkps.ps.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class SnapshottingTest {
  @Test
  void aSnapshotsDeadline_growsWithTheLargestShard() {
    // 800 MiB of values, with up to two optimizer states each, at 8 MiB/s: 300 s beyond an ordinary call.
    assertEquals(java.time.Duration.ofSeconds(360),
        Snapshotting.bound(java.time.Duration.ofSeconds(60), new long[] {1 << 20, 800L << 20}));
    assertEquals(java.time.Duration.ofSeconds(60), Snapshotting.bound(java.time.Duration.ofSeconds(60), new long[2]));
  }
}
