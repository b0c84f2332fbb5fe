package io.sparkps.ml.tracking;

import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.Role;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.spark.ml.Transformer;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tracks one SparkPS run in MLflow: the run is created with its params (every training setting,
 * the network, the data's schema) and tags, every record of the run's progress is logged as
 * metrics at its step (the chief's under their own names, say {@code loss}; another worker's as
 * {@code worker1/loss}; the evaluator's as {@code eval/accuracy}), and the run ends FINISHED, FAILED
 * (the cause in the tag {@code sparkps.failure}) or KILLED as the SparkPS run does.
 *
 * <p>Nothing here waits on the server in a training step: a record is queued on the driver's
 * progress thread, and one thread of this tracker creates the run and sends the queue in batches
 * within MLflow's limits (up to 1,000 metrics a request), about every second. A server that is down
 * or refuses never fails training: each call is tried again ({@link MlflowRest#ATTEMPTS} times), then
 * the trouble is logged once, the batch stays queued and is sent again later; the run goes on. What
 * could not be logged in the end (the server still down, or more than {@link #MAX_QUEUED} metrics
 * queued) is counted and logged once, never dropped silently.
 */
public final class MlflowTracking implements ProgressListener {
  private static final Logger LOG = LoggerFactory.getLogger(MlflowTracking.class);
  /** MLflow's limits on one logging request. */
  static final int METRICS_PER_BATCH = 1000;
  static final int PARAMS_PER_BATCH = 100;
  /** Metrics held while the server cannot take them; beyond, the oldest are dropped (and counted). */
  static final int MAX_QUEUED = 1_000_000;
  /** MLflow's limit on a param's value and a tag's value (characters). */
  static final int VALUE_LIMIT = 6000;
  private static final long SEND_EVERY_MILLIS = 1000;
  /** How long a run's end waits for the queue to be sent. */
  private static final long FLUSH_MILLIS = 60_000;

  /**
   * Where a run is tracked: the tracking server's URI (none: tracking off), the experiment's name,
   * the run's name (none: MLflow names it) and its tags; or, with {@code runId}, an MLflow run that
   * exists already (say Python's active run, under {@code mlflow.pyspark.ml.autolog()}), which the
   * fit logs into and leaves to its owner to end.
   */
  public record Settings(String trackingUri, String experimentName, String runName, Map<String, String> tags,
      String runId) {
    /** Copies the tags. */
    public Settings {
      tags = tags == null ? Map.of() : Map.copyOf(tags);
      runId = runId == null ? "" : runId.trim();
    }

    /**
     * The settings given, each left empty taken from the environment as MLflow's clients take it:
     * {@code MLFLOW_TRACKING_URI}, {@code MLFLOW_EXPERIMENT_NAME} (else the experiment "Default"),
     * {@code MLFLOW_RUN_ID} (a run to log into). A tracking URI given that is no http(s) server is
     * refused, naming it; one from the environment (say a local {@code file:} store that Python's
     * MLflow writes) is left aside with a warning, and the fit is not tracked.
     */
    public static Settings of(String trackingUri, String experimentName, String runName, Map<String, String> tags,
        String runId, Map<String, String> env) {
      String uri = blank(trackingUri) ? env.getOrDefault("MLFLOW_TRACKING_URI", "").trim() : trackingUri.trim();
      if (!uri.isEmpty() && !server(uri)) {
        String why = "MLflow tracking URI '" + uri + "' is not http(s)://host:port: SparkPS logs to a tracking server "
            + "(start one with 'mlflow server', or use your platform's)";
        if (!blank(trackingUri)) {
          throw new IllegalArgumentException(why);
        }
        LOG.warn("{}; this fit is not tracked (MLFLOW_TRACKING_URI)", why);
        uri = "";
      }
      String experiment = blank(experimentName) ? env.getOrDefault("MLFLOW_EXPERIMENT_NAME", "Default")
          : experimentName.trim();
      String run = blank(runId) ? env.getOrDefault("MLFLOW_RUN_ID", "") : runId;
      return new Settings(uri, blank(experiment) ? "Default" : experiment, runName == null ? "" : runName.trim(), tags,
          run);
    }

    /** {@link #of(String, String, String, Map, String, Map)} with no run given. */
    public static Settings of(String trackingUri, String experimentName, String runName, Map<String, String> tags,
        Map<String, String> env) {
      return of(trackingUri, experimentName, runName, tags, "", env);
    }

    /** Whether the fit logs into a run that exists (and is not its to end). */
    public boolean joinsRun() {
      return !runId.isEmpty();
    }

    private static boolean server(String uri) {
      String lower = uri.toLowerCase(java.util.Locale.ROOT);
      return lower.startsWith("http://") || lower.startsWith("https://");
    }

    /** Whether a run is tracked. */
    public boolean on() {
      return !blank(trackingUri);
    }

    private static boolean blank(String s) {
      return s == null || s.isBlank();
    }
  }

  private final MlflowRest rest;
  private final Settings settings;
  private final Map<String, String> params;
  private final Map<String, String> tags;
  private final ArrayDeque<MlflowRest.Metric> queue = new ArrayDeque<>();
  /** One string per metric name, whatever the number of records queued. */
  private final Map<String, String> keys = new java.util.HashMap<>();
  private final CountDownLatch finished = new CountDownLatch(1);
  /** The params in batches within MLflow's limit, each sent once, before any metric (the sender's own). */
  private final ArrayDeque<Map<String, String>> paramBatches = new ArrayDeque<>();
  private final Thread sender;
  private volatile String runId;
  private volatile String artifactUri;
  private long dropped;
  private long logged;
  private boolean ended;
  private JobStatus endStatus;
  private Throwable endFailure;
  private boolean troubleReported;
  /** What the run logs once its metrics are sent and before it is ended (its artifacts); set once. */
  private volatile Consumer<JobStatus> beforeEnd;

  private MlflowTracking(MlflowRest rest, Settings settings, Map<String, String> params, Map<String, String> tags) {
    this.rest = rest;
    this.settings = settings;
    this.params = params;
    this.tags = tags;
    this.sender = new Thread(this::send, "sparkps-mlflow");
    // never holds a JVM up: a fit waits for its run's end in MLflow itself (FitJob), bounded
    sender.setDaemon(true);
  }

  /**
   * Starts tracking a run with {@code params}: the run is created on the tracker's thread, so this
   * returns at once whatever the server does. Credentials come from {@code env} ({@link MlflowRest}).
   */
  public static MlflowTracking start(Settings settings, Map<String, String> params, Map<String, String> env) {
    return start(settings, params, env, Duration.ofSeconds(30), 500);
  }

  static MlflowTracking start(Settings settings, Map<String, String> params, Map<String, String> env,
      Duration callTimeout, long firstBackoffMillis) {
    MlflowRest rest = new MlflowRest(settings.trackingUri(), env, callTimeout, firstBackoffMillis);
    Map<String, String> tags = new LinkedHashMap<>(settings.tags());
    tags.putIfAbsent("mlflow.source.name", "SparkPS");
    String user = System.getProperty("user.name");
    if (user != null) {
      tags.putIfAbsent("mlflow.user", user);
    }
    MlflowTracking t = new MlflowTracking(rest, settings, limited(params), limited(tags));
    t.sender.start();
    return t;
  }

  private static Map<String, String> limited(Map<String, String> values) {
    Map<String, String> out = new LinkedHashMap<>();
    values.forEach((k, v) -> out.put(k, v == null ? "" : v.length() <= VALUE_LIMIT ? v
        : v.substring(0, VALUE_LIMIT - 3) + "...")); // MLflow refuses longer values
    return out;
  }

  /** The MLflow run's id once it is created; null before, or when it could not be. */
  public String runId() {
    return runId;
  }

  @Override
  public void onProgress(TaskProgress p) {
    if (p.role() == Role.PS || p.metrics().isEmpty()) {
      return;
    }
    synchronized (this) {
      metrics(p, this::key, this::queue);
      if (queue.size() >= METRICS_PER_BATCH) {
        notifyAll();
      }
    }
  }

  /**
   * The metrics of one progress record: each of its metrics under the task's {@link #prefix}, and the
   * examples it has seen (not the evaluator's), at the record's step and time.
   */
  private static void metrics(TaskProgress p, java.util.function.BinaryOperator<String> key,
      Consumer<MlflowRest.Metric> out) {
    String prefix = prefix(p);
    long time = p.timeMillis() > 0 ? p.timeMillis() : System.currentTimeMillis();
    p.metrics().forEach((k, v) -> out.accept(new MlflowRest.Metric(key.apply(prefix, k), v, time, p.step())));
    if (p.role() != Role.EVALUATOR) {
      out.accept(new MlflowRest.Metric(key.apply(prefix, "examples"), p.examples(), time, p.step()));
    }
  }

  /**
   * The metrics a tracked fit logs for {@code history} (a trained model's records), as JSON: a list of
   * {@code [key, value, timestamp, step]}, a value that is not finite as the string MLflow's clients
   * send ({@code "NaN"}, {@code "Infinity"}). Python logs them itself into a run this JVM cannot reach
   * (a local store).
   */
  public static String metricsJson(java.util.Collection<TaskProgress> history) {
    List<Object[]> out = new ArrayList<>();
    for (TaskProgress p : history) {
      if (p.role() != Role.PS && !p.metrics().isEmpty()) {
        metrics(p, String::concat, m -> out.add(new Object[] {m.key(), Double.isFinite(m.value()) ? m.value()
            : Double.isNaN(m.value()) ? "NaN" : m.value() > 0 ? "Infinity" : "-Infinity", m.timestampMillis(),
            m.step()}));
      }
    }
    try {
      return new org.nd4j.shade.jackson.databind.ObjectMapper().writeValueAsString(out);
    } catch (org.nd4j.shade.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * What a task's metric names start with, in MLflow and TensorBoard alike: nothing for the chief's
   * ({@code loss}), {@code worker1/} for another worker's, {@code eval/} for the evaluator's.
   */
  static String prefix(TaskProgress p) {
    return switch (p.role()) {
      case CHIEF -> "";
      case WORKER -> "worker" + p.index() + "/";
      case EVALUATOR -> "eval/";
      case PS -> throw new IllegalArgumentException("a ps reports no metrics");
    };
  }

  private String key(String prefix, String name) { // (called under the tracker's lock)
    return keys.computeIfAbsent(prefix + name, k -> k);
  }

  private void queue(MlflowRest.Metric m) {
    if (queue.size() >= MAX_QUEUED) {
      queue.pollFirst();
      dropped++;
    }
    queue.addLast(m);
  }

  @Override
  public void onEnd(JobStatus status, Throwable failure) {
    synchronized (this) {
      ended = true;
      endStatus = status;
      endFailure = failure;
      notifyAll();
    }
  }

  /**
   * Waits at most {@code timeout} for the run's end to reach MLflow (every metric sent or counted,
   * the run ended); whether it did.
   */
  public boolean awaitEnd(Duration timeout) throws InterruptedException {
    return finished.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Uploads {@code content} as the run's artifact {@code path} (say {@code summary.json}), once the run
   * exists; a server that cannot take it is logged and the caller goes on. Whether it was uploaded.
   */
  public boolean logArtifact(String path, byte[] content) throws InterruptedException {
    String id = runId;
    if (id == null) {
      return false;
    }
    try {
      rest.putArtifact(artifactUri, path, content);
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.warn("MLflow: artifact {} of run {} not logged ({})", path, id, e.getMessage());
      return false;
    }
  }

  /**
   * Has {@code task} run on this tracker's thread once the run's metrics are sent and before the
   * run is ended, told how the SparkPS run ended: what the run logs last (the trained model), so a
   * reader that sees the run ended finds it whole. A task that fails is logged, and the run is ended
   * as the SparkPS run ended.
   */
  public void beforeEnd(Consumer<JobStatus> task) {
    beforeEnd = task;
  }

  /**
   * Logs {@code model} as the run's MLflow model at {@code path} (say {@code model}), of MLflow's
   * {@code spark} flavor: saved as a {@code PipelineModel} (the model its one stage, unless it is a
   * pipeline) in the directory {@code sparkml/}, beside the {@code MLmodel} file and the Python
   * requirements, then recorded as the run's logged model; {@code mlflow.spark.load_model("runs:/<run
   * id>/model")} loads it in Python (with the {@code sparkps} package imported and its jar on the
   * session), and the model registry takes it. The model is written to a scratch directory of the
   * session's default file system first (its writers run Spark jobs), then each file is uploaded,
   * streamed, and the directory removed. A server that cannot take it is logged and the caller goes on;
   * whether it was logged.
   */
  public boolean logSparkModel(String path, Transformer model, SparkSession spark, Map<String, String> metadata)
      throws InterruptedException {
    String id = runId;
    if (id == null) {
      return false;
    }
    try {
      SparkFlavor.Logged logged = SparkFlavor.log(rest, artifactUri, id, path, model, spark, metadata);
      LOG.info("MLflow: the model of run {} is logged as {} ({} files, {} bytes)", id, path, logged.files(),
          logged.bytes());
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.warn("MLflow: the model of run {} was not logged ({})", id, e.getMessage(), e);
      return false;
    }
  }

  /** Metrics sent so far. */
  synchronized long logged() {
    return logged;
  }

  /** Metrics that could not be logged (counted, and reported once at the run's end). */
  synchronized long notLogged() {
    return dropped;
  }

  private void send() {
    try {
      if (settings.joinsRun()) {
        MlflowRest.Run run = rest.getRun(settings.runId());
        // The run's owner logged its own params first (autolog: the estimator's Params); MLflow refuses a
        // param logged again with another value, so only the settings it lacks are added.
        params.keySet().removeAll(run.params().keySet());
        if (!settings.tags().isEmpty()) {
          rest.logBatch(run.id(), List.of(), Map.of(), limited(settings.tags()));
        }
        artifactUri = run.artifactUri();
        runId = run.id();
        LOG.info("MLflow: logging into run {} at {} (its owner ends it)", runId, rest.uri());
      } else {
        String experiment = rest.experimentId(settings.experimentName());
        MlflowRest.Run run = rest.createRun(experiment, settings.runName(), System.currentTimeMillis(), tags);
        artifactUri = run.artifactUri();
        runId = run.id();
        LOG.info("MLflow: run {} in experiment '{}' at {}", runId, settings.experimentName(), rest.uri());
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("MLflow: this run is not tracked ({}); training goes on", e.getMessage());
      discardUntilEnd();
      return;
    } catch (InterruptedException e) {
      finished.countDown();
      return;
    }
    try {
      sendUntilEnd();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      finished.countDown();
    }
  }

  private void batchParams() {
    List<Map.Entry<String, String>> all = new ArrayList<>(params.entrySet());
    for (int from = 0; from < all.size(); from += PARAMS_PER_BATCH) {
      Map<String, String> batch = new LinkedHashMap<>();
      all.subList(from, Math.min(all.size(), from + PARAMS_PER_BATCH)).forEach(e -> batch.put(e.getKey(),
          e.getValue()));
      paramBatches.add(batch);
    }
  }

  /** Sends the params not sent yet; whether all are. */
  private boolean paramsSent() throws InterruptedException {
    while (!paramBatches.isEmpty()) {
      try {
        rest.logBatch(runId, List.of(), paramBatches.peekFirst(), Map.of());
        paramBatches.pollFirst();
      } catch (MlflowRest.MlflowException e) {
        if (e.transientFailure) {
          reportTrouble(e);
          return false;
        }
        // refused for what it holds: sending it again would be refused again, and hold up the metrics
        LOG.warn("MLflow: run {} refused {} params, which are not logged ({})", runId, paramBatches.pollFirst().size(),
            e.getMessage());
      } catch (IOException | RuntimeException e) {
        reportTrouble(e);
        return false;
      }
    }
    return true;
  }

  /** The run could not be created: every record is counted as not logged. */
  private void discardUntilEnd() {
    try {
      synchronized (this) {
        while (!ended) {
          dropped += queue.size();
          queue.clear();
          wait(SEND_EVERY_MILLIS);
        }
        dropped += queue.size();
        queue.clear();
      }
      if (dropped > 0) {
        LOG.warn("MLflow: {} metrics of this run were not logged (its MLflow run could not be created)", dropped);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      finished.countDown();
    }
  }

  private void sendUntilEnd() throws InterruptedException {
    batchParams();
    long flushDeadline = Long.MAX_VALUE;
    while (true) {
      List<MlflowRest.Metric> batch;
      boolean last;
      synchronized (this) {
        if (!ended && queue.size() < METRICS_PER_BATCH) {
          wait(SEND_EVERY_MILLIS);
        }
        if (ended && flushDeadline == Long.MAX_VALUE) {
          flushDeadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FLUSH_MILLIS);
        }
        batch = new ArrayList<>(Math.min(queue.size(), METRICS_PER_BATCH));
        while (batch.size() < METRICS_PER_BATCH && !queue.isEmpty()) {
          batch.add(queue.pollFirst());
        }
        last = ended && queue.isEmpty();
      }
      boolean out = paramsSent() && (batch.isEmpty() || sent(batch));
      if (!out) {
        synchronized (this) {
          for (int i = batch.size() - 1; i >= 0; i--) {
            queue.addFirst(batch.get(i)); // sent again later, oldest first
          }
          if (ended && System.nanoTime() > flushDeadline) {
            dropped += queue.size();
            queue.clear();
            last = true;
          } else {
            last = false;
            wait(5 * SEND_EVERY_MILLIS);
          }
        }
      }
      if (last) {
        end();
        return;
      }
    }
  }

  private boolean sent(List<MlflowRest.Metric> batch) throws InterruptedException {
    try {
      rest.logBatch(runId, batch, Map.of(), Map.of());
      synchronized (this) {
        logged += batch.size();
      }
      return true;
    } catch (MlflowRest.MlflowException e) {
      if (e.transientFailure) {
        reportTrouble(e);
        return false;
      }
      // refused for what it holds: counted, and the metrics after it go on
      LOG.warn("MLflow: run {} refused {} metrics, which are not logged ({})", runId, batch.size(), e.getMessage());
      synchronized (this) {
        dropped += batch.size();
      }
      return true;
    } catch (IOException | RuntimeException e) {
      reportTrouble(e);
      return false;
    }
  }

  /** Logs the first failure to send (the later ones are retried quietly). */
  private void reportTrouble(Exception e) {
    if (!troubleReported) {
      troubleReported = true;
      LOG.warn("MLflow: what run {} logs is not reaching {} ({}); it is kept and sent again, and training goes on",
          runId, rest.uri(), e.getMessage());
    }
  }

  private void end() throws InterruptedException {
    Consumer<JobStatus> last = beforeEnd;
    if (last != null) {
      try {
        last.accept(endStatus);
      } catch (RuntimeException e) {
        LOG.warn("MLflow: what run {} logs last failed ({}); the run is ended", runId, e.getMessage(), e);
      }
    }
    String status = switch (endStatus) {
      case SUCCEEDED -> "FINISHED";
      case CANCELLED -> "KILLED";
      default -> "FAILED";
    };
    long notLogged;
    synchronized (this) {
      notLogged = dropped;
    }
    try {
      Map<String, String> endTags = new LinkedHashMap<>();
      if (endFailure != null) {
        endTags.put("sparkps.failure", String.valueOf(endFailure.getMessage()));
      }
      if (notLogged > 0) {
        endTags.put("sparkps.metricsNotLogged", Long.toString(notLogged));
      }
      if (!endTags.isEmpty()) {
        rest.logBatch(runId, List.of(), Map.of(), limited(endTags));
      }
      if (!settings.joinsRun()) {
        rest.endRun(runId, status, System.currentTimeMillis());
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("MLflow: run {} could not be ended as {} ({})", runId, status, e.getMessage());
    }
    if (notLogged > 0) {
      LOG.warn("MLflow: {} metrics of run {} were not logged (the server could not take them)", notLogged, runId);
    }
  }
}
