package io.sparkps.spark;

import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.spark.coord.History;
import io.sparkps.spark.coord.Member;
import io.sparkps.spark.coord.PsLoss;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.recovery.PsRecovery;
import io.sparkps.spark.ui.RunStore;
import io.sparkps.spark.ui.SparkPsEvents;
import io.sparkps.spark.ui.SparkPsListener;
import io.sparkps.spark.ui.SparkPsSource;
import io.sparkps.spark.ui.SparkPsTab;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.Supplier;
import org.apache.spark.SparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shows a run where Spark users look: it posts the run's state and its records on Spark's listener
 * bus every {@link #PERIOD_MS} ms and at its end (the SparkPS tab of the live UI shows them, and
 * the event log keeps them for the History Server), and keeps the {@code sparkps} metrics source
 * current. The first run of an application adds the tab and the listener. Best effort: a failure
 * here is logged, never the run's.
 */
final class RunPublisher {
  private static final Logger LOG = LoggerFactory.getLogger(RunPublisher.class);
  static final long PERIOD_MS = 2_000;
  /** Records per StepsRecorded event at most (an event log line stays well under a few MB). */
  private static final int MAX_ROWS_PER_EVENT = 5_000;
  /** The SparkContexts whose UI has the tab (weak: a stopped context is collected). */
  private static final Map<SparkContext, Boolean> INSTALLED = new WeakHashMap<>();

  private final SparkContext sc;
  private final String runId;
  private final ClusterSpec spec;
  private final Registry registry;
  private final Supplier<RunRecord> record;
  private final Supplier<List<VariableInfo>> variables;
  private final UntilEnd thread;
  private long cursor;
  private long lastExamples = -1;
  private long lastNanos;
  private int ticks;
  private List<VariableInfo> lastVariables = List.of();

  RunPublisher(SparkContext sc, String runId, ClusterSpec spec, Registry registry, Supplier<RunRecord> record,
      Supplier<List<VariableInfo>> variables) {
    this.sc = sc;
    this.runId = runId;
    this.spec = spec;
    this.registry = registry;
    this.record = record;
    this.variables = variables;
    this.thread = new UntilEnd("sparkps-publisher-" + runId, PERIOD_MS, this::tick);
  }

  /** Adds the tab and listener to the application's UI (once), posts the run's start, and publishes from then on. */
  void start() {
    try {
      install(sc);
      SparkPsSource source = SparkPsSource.get();
      if (source != null) {
        source.runStarted();
      }
      publish(false);
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("SparkPS run {}: cannot show the run in the Spark UI and metrics: {}", runId, e.toString());
      return;
    }
    thread.start();
  }

  /** The run ended: publishes its last records and final state (waits for it, at most 10 s), then stops. */
  void end() {
    thread.end(10_000);
  }

  private void tick(boolean last) {
    try {
      publish(last);
    } catch (RuntimeException e) {
      LOG.warn("SparkPS run {}: cannot publish its progress to the Spark UI: {}", runId, e.toString());
    }
  }

  private static void install(SparkContext sc) {
    synchronized (INSTALLED) {
      if (INSTALLED.containsKey(sc) || sc.isStopped()) {
        return;
      }
      INSTALLED.put(sc, true);
    }
    if (sc.ui().isDefined()) {
      RunStore store = new RunStore(sc.statusStore().store());
      sc.addSparkListener(new SparkPsListener(store));
      SparkPsTab.attach(sc.ui().get(), store, sc.conf());
    }
  }

  private void publish(boolean last) {
    if (sc.isStopped()) {
      return;
    }
    List<History.Entry> fresh = registry.historySince(cursor);
    for (int from = 0; from < fresh.size(); from += MAX_ROWS_PER_EVENT) {
      List<History.Entry> chunk = fresh.subList(from, Math.min(fresh.size(), from + MAX_ROWS_PER_EVENT));
      SparkPsEvents.StepsRecorded e = new SparkPsEvents.StepsRecorded();
      e.runId = runId;
      e.first = chunk.get(0).seq();
      for (History.Entry h : chunk) {
        if (h.member().progress().getMetricsCount() > 0) {
          e.rows.add(row(h.member()));
        }
      }
      if (!e.rows.isEmpty()) {
        sc.listenerBus().post(e);
      }
      cursor = chunk.get(chunk.size() - 1).seq() + 1;
    }
    RunRecord r = record.get();
    if (!r.status().isDone() && ticks++ % 3 == 0) {
      lastVariables = variables.get(); // a call to every ps: every third update
    }
    sc.listenerBus().post(update(r));
    metrics(r, last);
  }

  private static SparkPsEvents.StepRow row(Member m) {
    SparkPsEvents.StepRow row = new SparkPsEvents.StepRow();
    row.role = m.role().name();
    row.index = m.index();
    row.step = m.progress().getStep();
    row.examples = m.progress().getExamples();
    row.timeMillis = m.progress().getTimeMillis();
    row.metrics = new LinkedHashMap<>();
    // JSON has no NaN or infinities: such a value is left out (a gap in its curve)
    m.progress().getMetricsMap().forEach((k, v) -> row.metrics.put(k, Double.isFinite(v) ? v : null));
    return row;
  }

  private SparkPsEvents.RunUpdate update(RunRecord r) {
    SparkPsEvents.RunUpdate u = new SparkPsEvents.RunUpdate();
    u.runId = runId;
    u.name = r.name();
    u.status = r.status().name();
    u.cause = r.cause();
    u.startedMillis = r.startedMillis();
    u.elapsedMillis = r.elapsed().toMillis();
    u.numPs = spec.numPs();
    u.numWorkers = spec.numWorkers();
    u.evaluator = spec.hasEvaluator();
    u.recordsNotKept = r.recordsNotKept();
    long now = registry.now();
    long silentAfter = spec.heartbeatInterval().toNanos() * 2;
    List<PsLoss> losses = registry.losses();
    for (Member m : registry.members()) {
      SparkPsEvents.RoleRow row = new SparkPsEvents.RoleRow();
      row.role = m.role().name();
      row.index = m.index();
      row.host = m.host();
      row.executor = m.executorId();
      row.attempt = m.attempt();
      row.step = m.progress().getStep();
      row.heardMillisAgo = Math.max(0, (now - m.lastSeenNanos()) / 1_000_000L);
      boolean lost = losses.stream().anyMatch(l -> m.role().name().equals("PS") && l.shard() == m.index()
          && l.lostAddress().equals(m.address()));
      row.state = lost ? "lost" : m.finished() ? "finished" : r.status().isDone() ? "stopped"
          : now - m.lastSeenNanos() > silentAfter ? "silent" : m.role().name().equals("PS") ? "serving" : "running";
      u.roles.add(row);
    }
    List<String> addresses = registry.psAddresses();
    for (int i = 0; i < spec.numPs(); i++) {
      SparkPsEvents.ShardRow s = new SparkPsEvents.ShardRow();
      s.index = i;
      s.address = addresses.get(i);
      for (VariableInfo v : lastVariables) {
        if (v.shard() == i) {
          s.variables++;
          long width = 1;
          for (int d = 1; d < v.shape().length; d++) {
            width *= v.shape()[d];
          }
          s.parameterBytes += (v.rowEnd() - v.rowStart()) * width * Float.BYTES;
          s.version = Math.max(s.version, v.version());
        }
      }
      final int shard = i;
      s.recoveries = (int) r.psRecoveries().stream().filter(p -> p.shard() == shard).count();
      u.shards.add(s);
    }
    for (RunRecord.StageAttempt a : r.stageAttempts()) {
      SparkPsEvents.AttemptRow row = new SparkPsEvents.AttemptRow();
      row.attempt = a.attempt();
      row.endedBy = a.endedBy();
      u.attempts.add(row);
    }
    for (PsRecovery p : r.psRecoveries()) {
      SparkPsEvents.RecoveryRow row = new SparkPsEvents.RecoveryRow();
      row.ps = p.shard();
      row.lostAddress = p.lostAddress();
      row.reason = p.reason();
      row.atStep = p.atStep();
      row.replacement = p.replacement();
      row.refilledFrom = p.source();
      row.downtimeMillis = p.downtime().toMillis();
      u.recoveries.add(row);
    }
    return u;
  }

  /** Updates the metrics source from the workers' latest progress. */
  private void metrics(RunRecord r, boolean last) {
    SparkPsSource source = SparkPsSource.get();
    if (source == null) {
      return;
    }
    long steps = 0;
    long examples = 0;
    double loss = 0;
    int losses = 0;
    double bytes = 0;
    for (Map.Entry<Integer, io.sparkps.spark.coord.proto.Progress> e : registry.workerProgress().entrySet()) {
      var p = e.getValue();
      steps += p.getStep();
      examples += p.getExamples();
      Double l = p.getMetricsMap().get("loss");
      if (l != null && Double.isFinite(l)) {
        loss += l;
        losses++;
      }
      bytes += p.getMetricsMap().getOrDefault("wireBytes", 0.0) + p.getMetricsMap().getOrDefault("tableBytes", 0.0);
    }
    long now = System.nanoTime();
    if (lastExamples >= 0 && now > lastNanos) {
      source.set("examplesPerSecond", Math.max(0, examples - lastExamples) * 1e9 / (now - lastNanos));
    }
    lastExamples = examples;
    lastNanos = now;
    source.set("steps", steps);
    source.set("examples", examples);
    if (losses > 0) {
      source.set("loss", loss / losses);
    }
    source.set("psBytes", bytes);
    source.set("psRecoveries", r.psRecoveries().size());
    source.set("stageAttempts", r.stageAttempts().size());
    List<TaskProgress> evaluator = r.evaluatorHistory();
    if (!evaluator.isEmpty()) {
      evaluator.get(evaluator.size() - 1).metrics().forEach((k, v) -> source.set("evaluation." + k, v));
    }
    if (last) {
      source.set("examplesPerSecond", 0);
      source.runEnded(r.status().name());
    }
  }
}
