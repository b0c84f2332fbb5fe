package io.sparkps.spark.recovery;

import io.sparkps.spark.coord.Registry;
import java.time.Duration;
import java.util.List;

/** The reports of the ps losses a run's registry recorded. */
public final class PsRecoveries {
  private PsRecoveries() {}

  /** Each ps loss {@code registry} recorded, as its recovery (with its downtime so far, if not refilled yet). */
  public static List<PsRecovery> of(Registry registry) {
    long now = registry.now();
    return registry.losses().stream().map(l -> new PsRecovery(l.shard(), l.lostAddress(), l.reason(), l.atStep(),
        l.replacement(), l.source(), l.restoredAtStep(),
        Duration.ofNanos((l.source() == null ? now : l.restoredNanos()) - l.lostNanos()))).toList();
  }
}
