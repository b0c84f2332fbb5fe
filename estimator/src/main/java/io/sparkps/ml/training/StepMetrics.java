package io.sparkps.ml.training;

import io.sparkps.ps.PsClient;
import java.util.HashMap;
import java.util.Map;

/**
 * The metrics a worker records for each step, beside its loss and epoch:
 * <ul>
 *   <li>{@code stepMs}: wall time since the previous step ended;
 *   <li>{@code computeMs}: the forward and backward pass (and a worker-side update);
 *   <li>{@code pullMs}, {@code pushMs}: the dense variables' transfers (a SYNC pull includes its
 *       wait for the other workers' pushes of the step before); with transfers overlapping the passes
 *       ({@link OverlappedTransfers}), what the step waited for them: the forward pass for parameters,
 *       the end of the step for the last pushes;
 *   <li>{@code waitMs}: waiting for the minibatch (the input pipeline);
 *   <li>{@code tableMs}: an embedding model's table pulls and pushes;
 *   <li>{@code staleness}: updates of other workers the shards applied between this worker's last
 *       two reads (0 in SYNC; about the other workers' count in ASYNC);
 *   <li>{@code wireBytes}: what this worker's client moved over the shards' bulk ports so far.
 * </ul>
 * Each costs a clock read or a field read: building the map is all a step pays.
 */
public final class StepMetrics {
  private final PsClient ps;
  private long lastEnd = System.nanoTime();
  private long lastVersion = -1;
  private double staleness;

  public StepMetrics(PsClient ps) {
    this.ps = ps;
  }

  /** The metrics of the step that just ended; {@code more} adds the caller's (table bytes and keys). */
  public Map<String, Double> of(double loss, int epoch, PsTrainingStep step, double waitMillis, double tableMillis,
      Map<String, Double> more) {
    long now = System.nanoTime();
    long version = ps.readVersion();
    if (version != lastVersion) {
      if (lastVersion >= 0) {
        staleness = Math.max(0, version - lastVersion - 1);
      }
      lastVersion = version;
    }
    Map<String, Double> m = new HashMap<>(16 + more.size() * 2);
    m.putAll(more);
    m.put("loss", loss);
    m.put("epoch", (double) epoch);
    m.put("stepMs", (now - lastEnd) / 1e6);
    m.put("computeMs", step.computeMillis());
    m.put("pullMs", step.pullMillis());
    m.put("pushMs", step.pushMillis());
    m.put("waitMs", waitMillis);
    if (tableMillis >= 0) {
      m.put("tableMs", tableMillis);
    }
    m.put("staleness", staleness);
    m.put("wireBytes", (double) ps.bulkWireBytes());
    lastEnd = now;
    return m;
  }
}
