package io.sparkps.spark;

import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.spark.coord.CoordinatorServer;
import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.recovery.PsRecoveries;
import io.sparkps.spark.recovery.PsRecovery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A training run in progress, as a future (Dask style): it returns at once; {@link #status()},
 * {@link #progress()} and {@link #inspect()} show it live; {@link #get(Duration)} waits for the
 * result; {@link #cancel()} stops it. One thread per run drives the lifecycle (ps tasks, evaluator,
 * barrier stage, teardown); it is a daemon and ends with the run.
 *
 * @param <R> the workers' result type
 */
public final class TrainingJob<R> {
  private static final Logger LOG = LoggerFactory.getLogger(TrainingJob.class);
  /** The runs of this JVM that have started and not ended, for notebooks' interrupt and for inspection. */
  private static final Set<TrainingJob<?>> RUNNING = ConcurrentHashMap.newKeySet();
  /** Longest {@link #inspect()} waits for the ps shards' variables. */
  private static final Duration INSPECT_TIMEOUT = Duration.ofSeconds(3);

  private final JavaSparkContext sc;
  private final ClusterSpec spec;
  private final String runId = UUID.randomUUID().toString().substring(0, 8);
  private final PsToken token = PsToken.generate();
  private final io.sparkps.ps.tls.PsTls tls;
  private final Registry registry;
  private final Launcher<?, R> launcher;
  private final CountDownLatch done = new CountDownLatch(1);
  private volatile JobStatus status = JobStatus.PENDING;
  private volatile boolean cancelled;
  private volatile RunResult<R> result;
  private volatile RuntimeException failure;
  private volatile List<String> psAddresses = List.of();
  private volatile List<VariableInfo> finalVariables = List.of();
  private final Listeners listeners;
  private final RunPublisher publisher;
  private final long startedMillis = System.currentTimeMillis();
  private final long startedNanos = System.nanoTime();
  private volatile long endedNanos;
  /** Reads the chief's result from the shards when the chief returned null (null: the chief's result stands). */
  private final java.util.function.Function<PsClient, R> chiefResult;

  <T> TrainingJob(JavaSparkContext sc, ClusterSpec spec, JavaRDD<T> data, WorkerFunction<T, R> function,
      EvaluatorFunction evaluator, InputPlacement placement, java.util.function.Function<PsClient, R> chiefResult,
      RoleProfiles profiles) {
    this.chiefResult = chiefResult;
    this.sc = sc;
    this.spec = spec;
    RunSecurity.Decision security = RunSecurity.decide(sc.getConf(), spec);
    security.warnings().forEach(w -> LOG.warn(w));
    this.tls = security.tls();
    this.registry = new Registry(spec.numPs(), spec.numWorkers());
    registry.setHeartbeatInterval(spec.heartbeatInterval());
    if (profiles.note() != null || profiles.any()) {
      LOG.info("SparkPS run {}: {}", runId, profiles.describe());
    }
    if (profiles.caveat() != null) {
      LOG.warn("SparkPS run {}: {}", runId, profiles.caveat());
    }
    this.launcher = new Launcher<>(sc, spec, runId, data, function, evaluator, placement, profiles);
    this.listeners = new Listeners(runId, registry);
    this.publisher = new RunPublisher(sc.sc(), runId, spec, registry, this::record, this::listVariables);
  }

  /**
   * Registers a listener for this run's progress (every report, live, then the end); one added
   * after the end still receives the whole history and the end.
   */
  public TrainingJob<R> addListener(ProgressListener listener) {
    listeners.add(listener);
    return this;
  }

  /**
   * The runs started in this JVM that have not ended yet, in no particular order. A notebook
   * kernel cancels these when the user interrupts a cell.
   */
  public static List<TrainingJob<?>> running() {
    return List.copyOf(RUNNING);
  }

  void start() {
    RUNNING.add(this);
    publisher.start();
    Thread thread = new Thread(this::lifecycle, "sparkps-run-" + runId);
    thread.setDaemon(true);
    thread.start();
  }

  private void lifecycle() {
    long t0 = System.nanoTime();
    CoordinatorServer coordinator = null;
    List<R> results = null;
    JobStatus outcome;
    long trained = 0;
    try {
      status = JobStatus.LAUNCHING;
      coordinator = new CoordinatorServer(sc.getConf().get("spark.driver.host", "127.0.0.1"), token, tls, registry);
      LOG.info("SparkPS run {}: launching {} ps, {} workers{} on {} (coordinator at {}, TLS {})", runId, spec.numPs(),
          spec.numWorkers(), spec.hasEvaluator() ? " and an evaluator" : "", sc.master(), coordinator.address(),
          tls != null ? "on" : "off");
      TaskEnv env = env(coordinator.address());
      psAddresses = launcher.startPs(env, registry, () -> cancelled);
      LOG.info("SparkPS run {}: every ps serves ({}) after {} ms", runId, psAddresses,
          (System.nanoTime() - t0) / 1_000_000);
      env = env.withPs(psAddresses);
      launcher.startEvaluator(env);
      status = JobStatus.RUNNING;
      results = launcher.train(env, registry, launcher.supervisor(registry));
      results = withChiefResult(results);
      trained = System.nanoTime();
      outcome = JobStatus.SUCCEEDED;
    } catch (Throwable t) {
      failure = cancelled ? new CancellationException("the SparkPS run " + runId + " was cancelled")
          : launcher.explain(t, registry);
      outcome = cancelled ? JobStatus.CANCELLED : JobStatus.FAILED;
    }
    try {
      teardown(coordinator, outcome == JobStatus.SUCCEEDED);
      if (outcome == JobStatus.SUCCEEDED) {
        result = new RunResult<>(results, Views.history(registry, Role.EVALUATOR), Views.workerHistory(registry),
            Views.stageAttempts(registry), Views.recovered(registry), Duration.ofNanos(trained - t0),
            PsRecoveries.of(registry));
      }
    } finally {
      endedNanos = System.nanoTime();
      RUNNING.remove(this); // before the status: a run seen ended is never among the running ones
      status = outcome;
      if (outcome == JobStatus.SUCCEEDED) {
        LOG.info("SparkPS run {}: SUCCEEDED in {} ms; everything it started is stopped", runId,
            (System.nanoTime() - t0) / 1_000_000);
      } else {
        LOG.info("SparkPS run {}: {} after {} ms ({}); everything it started is stopped", runId, outcome,
            (System.nanoTime() - t0) / 1_000_000, failure == null ? "" : failure.getMessage());
      }
      publisher.end(); // (waits for a publication in flight, which may be a call to every ps)
      done.countDown();
      listeners.end(outcome, failure);
    }
  }

  /**
   * Releases everything the run started: the evaluator finishes first (its last reads need the ps
   * tasks; after a failure it is cancelled at once), then the ps tasks, then the coordinator.
   */
  private void teardown(CoordinatorServer coordinator, boolean succeeded) {
    try {
      finalVariables = listVariables();
      Duration grace = spec.heartbeatInterval().multipliedBy(3).plusSeconds(10);
      registry.stopEvaluator();
      if (!launcher.stopEvaluator(succeeded ? spec.evaluatorGrace() : Duration.ZERO) && succeeded) {
        LOG.warn("the evaluator did not finish within {} ms of the end of training: its job was cancelled and its "
            + "remaining reports are lost (raise ClusterSpec.optEvaluatorGrace)", spec.evaluatorGrace().toMillis());
      }
      registry.stop();
      stopServers();
      launcher.stopBackgroundJobs(grace);
    } finally {
      if (coordinator != null) {
        coordinator.close();
      }
      // Executors in this JVM (local mode) let go of their copies now; others when the coordinator is gone.
      KeptCopies.release(runId);
    }
  }

  /** The run's id, part of its Spark job groups ({@code sparkps-<id>-ps}, {@code -train}, {@code -evaluator}). */
  public String runId() {
    return runId;
  }

  /** Where the run stands. */
  public JobStatus status() {
    return status;
  }

  /** Whether it has ended. */
  public boolean isDone() {
    return status.isDone();
  }

  /**
   * What the run did so far, or in all once it has ended, whatever its end: status and cause,
   * stage attempts with their causes, ps recoveries, and the recorded history.
   */
  public RunRecord record() {
    JobStatus now = status;
    String cause = failure == null ? null : failure.getMessage() == null ? failure.toString()
        : failure.getMessage().lines().findFirst().orElse("");
    long end = now.isDone() && endedNanos != 0 ? endedNanos : System.nanoTime();
    return new RunRecord(runId, spec.name(), now, cause, startedMillis, Duration.ofNanos(end - startedNanos),
        Views.stageAttemptList(registry, now == JobStatus.FAILED ? cause : null), PsRecoveries.of(registry),
        Views.workerHistory(registry), Views.history(registry, Role.EVALUATOR), registry.recordsNotKept());
  }

  /** The latest progress of every task that registered. */
  public List<TaskProgress> progress() {
    return Views.progress(registry);
  }

  /** The ps tasks lost so far and how each came back (live; no call to the ps shards). */
  public List<PsRecovery> psRecoveries() {
    return PsRecoveries.of(registry);
  }

  /**
   * Roles, hosts, attempts, progress, and the ps variables with their versions: live while the
   * run goes on, as they were at its end afterwards.
   */
  public ClusterView inspect() {
    List<VariableInfo> variables = status.isDone() ? finalVariables
        : status == JobStatus.RUNNING ? listVariables() : List.of();
    return new ClusterView(status, progress(), variables, PsRecoveries.of(registry), TaskResources.of(registry));
  }

  /** What the run's tasks are shipped, before the ps serve. */
  private TaskEnv env(String coordinatorAddress) {
    return new TaskEnv(spec, runId, coordinatorAddress, token, tls, List.of());
  }

  /** Whether the run's channels use TLS. */
  public boolean tls() {
    return tls != null;
  }

  /** The results, the chief's read from the shards when it returned null and the run reads it there. */
  private List<R> withChiefResult(List<R> results) {
    if (chiefResult == null || results.isEmpty() || results.get(0) != null) {
      return results;
    }
    List<R> all = new ArrayList<>(results);
    try (PsClient client = env("").psClientBuilder(currentPs()).build()) {
      all.set(0, chiefResult.apply(client));
    }
    return all;
  }

  /**
   * Reads from the run's ps shards while it trains (say the variables' current values, for
   * TensorBoard's histograms): {@code read} is given a client of the shards where they serve now,
   * each call bounded by {@code timeout}. Empty when the run is not training (not yet, or no more).
   */
  public <T> java.util.Optional<T> readPs(Duration timeout, java.util.function.Function<PsClient, T> read) {
    List<String> psAddresses = currentPs();
    if (status != JobStatus.RUNNING || psAddresses.isEmpty()) {
      return java.util.Optional.empty();
    }
    try (PsClient client = env("").psClientBuilder(psAddresses).optCallTimeout(timeout).build()) {
      return java.util.Optional.ofNullable(read.apply(client));
    }
  }

  /** The ps variables, or none when the ps shards are not (or no longer) reachable. */
  private List<VariableInfo> listVariables() {
    List<String> psAddresses = currentPs();
    if (psAddresses.isEmpty()) {
      return List.of();
    }
    // Bounded below the call timeout: a hung ps must not hang the view of the run.
    Duration bound = spec.callTimeout().compareTo(INSPECT_TIMEOUT) < 0 ? spec.callTimeout() : INSPECT_TIMEOUT;
    try (PsClient client = env("").psClientBuilder(psAddresses).optCallTimeout(bound).build()) {
      return new ArrayList<>(client.listVariables());
    } catch (RuntimeException e) {
      return List.of();
    }
  }

  /**
   * Tells the ps shards to stop now rather than at their next heartbeat, so their tasks end at
   * once; a shard that cannot be reached stops at its heartbeat (or its job is cancelled).
   */
  private void stopServers() {
    List<String> psAddresses = currentPs();
    if (psAddresses.isEmpty()) {
      return;
    }
    try (PsClient client = env("").psClientBuilder(psAddresses).optCallTimeout(Duration.ofSeconds(5)).build()) {
      client.shutdownServers();
    } catch (RuntimeException unreachable) {
      // the heartbeat or the job's cancellation stops it
    }
  }

  /** Where each ps serves now (a replaced one at its replacement), or none before all registered. */
  private List<String> currentPs() {
    List<String> now = registry.psAddresses();
    return psAddresses.isEmpty() || now.contains(null) ? psAddresses : now;
  }

  /** Cancels the run: its Spark jobs are cancelled and everything it started is stopped. */
  public void cancel() {
    cancelled = true;
    registry.stop();
    launcher.cancelAll();
  }

  /**
   * Waits at most {@code timeout} for the result. Throws the run's {@link TrainingFailure},
   * a {@link CancellationException} if it was cancelled, or a {@link TimeoutException} naming
   * the run and its status if it is still going.
   */
  public RunResult<R> get(Duration timeout) throws TimeoutException, InterruptedException {
    if (!done.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new TimeoutException("the SparkPS run " + runId + " is still " + status + " after " + timeout.toMillis()
          + " ms; progress: " + progress());
    }
    if (failure != null) {
      throw failure;
    }
    return result;
  }

  /** Waits for the run to end, however long training takes (each phase has its own bounds). */
  public RunResult<R> join() throws InterruptedException {
    done.await();
    if (failure != null) {
      throw failure;
    }
    return result;
  }
}
