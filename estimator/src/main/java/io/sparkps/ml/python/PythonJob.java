package io.sparkps.ml.python;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.FitJob;
import io.sparkps.ml.TrainingProgress;
import io.sparkps.spark.TaskProgress;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/**
 * A {@link FitJob} as Python's {@code sparkps.ml.FitJob} reads it: where it stands in one call
 * ({@link #snapshot()}, JSON), its progress line as the command line prints it, cancel, and the
 * model once it has ended.
 */
public final class PythonJob {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final FitJob job;
  private final TrainingProgress progress;

  /** How long a snapshot of an ended run waits for the end to reach its progress line. */
  static final Duration END_WAIT = Duration.ofSeconds(10);

  public PythonJob(FitJob job) {
    this.job = job;
    this.progress = TrainingProgress.of(job);
  }

  public FitJob job() {
    return job;
  }

  /**
   * The metrics a tracked fit logs, for every record of {@code model}'s training (the workers' and
   * the evaluator's), as {@link io.sparkps.ml.tracking.MlflowTracking#metricsJson} gives them: what
   * Python logs itself into an active MLflow run this JVM cannot reach.
   */
  public static String mlflowMetrics(io.sparkps.ml.Dl4jModel model) {
    java.util.List<io.sparkps.spark.TaskProgress> history = new java.util.ArrayList<>(
        model.summary().workerHistory());
    history.addAll(model.summary().evaluatorHistory());
    return io.sparkps.ml.tracking.MlflowTracking.metricsJson(history);
  }

  /**
   * {"status", "done", "step", "totalSteps", "line", "summary", "tasks": [{role, index, host,
   * executor, attempt, step, examples, metrics, message, ageMillis}]}: everything a poll shows.
   */
  public String snapshot() throws InterruptedException {
    io.sparkps.spark.JobStatus status = job.status();
    // A snapshot that says "done" is the last one Python reads: its line must show the end, which reaches
    // the listener a moment after the status does.
    if (status.isDone() && !progress.awaitEnd(END_WAIT)) {
      org.slf4j.LoggerFactory.getLogger(PythonJob.class).warn("run {} ended, but its progress listener had not "
          + "heard of the end within {} ms: its last progress line may be behind", job.runId(), END_WAIT.toMillis());
    }
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("status", status.name());
    s.put("done", status.isDone());
    s.put("runId", job.runId());
    s.put("step", progress.step());
    s.put("totalSteps", progress.totalSteps());
    s.put("line", progress.line());
    s.put("summary", progress.summary());
    s.put("tasks", tasks(job.progress()));
    try {
      return JSON.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<Map<String, Object>> tasks(List<TaskProgress> reports) {
    return reports.stream().map(p -> {
      Map<String, Object> t = new LinkedHashMap<>();
      t.put("role", p.role().name());
      t.put("index", p.index());
      t.put("host", p.host());
      t.put("executor", p.executor());
      t.put("attempt", p.attempt());
      t.put("step", p.step());
      t.put("examples", p.examples());
      t.put("metrics", p.metrics());
      t.put("message", p.message());
      t.put("ageMillis", p.ageMillis());
      return t;
    }).toList();
  }

  public void cancel() {
    job.cancel();
  }

  /** The trained model, waiting at most {@code millis}; throws the run's failure as {@link FitJob#get} does. */
  public Dl4jModel model(long millis) throws TimeoutException, InterruptedException {
    return job.get(Duration.ofMillis(millis));
  }
}
