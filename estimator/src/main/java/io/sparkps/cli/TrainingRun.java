package io.sparkps.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.sparkps.ml.Dl4jEstimator;
import io.sparkps.ml.Dl4jModel;
import io.sparkps.ml.FitJob;
import io.sparkps.spark.TaskProgress;
import java.io.IOException;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.deeplearning4j.util.ModelSerializer;

/**
 * One training run of the command line into a run directory: {@code metrics.jsonl} as training
 * goes, then the Spark ML model ({@code model/}), the DL4J model file ({@code model.dl4j.zip}),
 * {@code summary.json} (final metrics, timings, provenance) and {@code report.html}.
 */
final class TrainingRun {
  static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  /** Training failed: the run's failure, the last step the failed task reported (-1 if none), and where its record is. */
  static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient io.sparkps.spark.TrainingFailure failure;
    final long lastStep;
    final String record;

    Failed(io.sparkps.spark.TrainingFailure failure, long lastStep, String record) {
      super(failure.getMessage(), failure);
      this.failure = failure;
      this.lastStep = lastStep;
      this.record = record;
    }
  }

  private TrainingRun() {}

  static Map<String, Object> execute(Dl4jEstimator estimator, Dataset<Row> train, Dataset<Row> eval, RunDirectory dir,
      boolean bar, PrintStream out) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    RunRecorder recorder = new RunRecorder(dir.create("metrics.jsonl"));
    FitJob job;
    try {
      job = estimator.copy(new org.apache.spark.ml.param.ParamMap()).addListener(recorder).fitAsync(train, eval);
    } catch (RuntimeException e) {
      recorder.close();
      throw e;
    }
    out.printf(Locale.ROOT, "sparkps: run %s: %d steps per worker (%d per epoch), %d workers, %d ps%n", job.runId(),
        job.totalSteps(), job.stepsPerEpoch(), estimator.getOrDefault(estimator.numWorkers()),
        estimator.getOrDefault(estimator.numPs()));
    job.addListener(new ConsoleProgress(out, job.totalSteps(), job.stepsPerEpoch(), bar));
    try (RunEnding ending = new RunEnding(job, dir, recorder)) {
      Dl4jModel model;
      try {
        model = job.join();
      } catch (io.sparkps.spark.TrainingFailure f) {
        ending.recordEnd();
        throw new Failed(f, job.progress().stream().filter(p -> p.role() == f.role() && p.index() == f.index())
            .mapToLong(TaskProgress::step).max().orElse(-1), dir.uri("summary.json"));
      } catch (java.util.concurrent.CancellationException c) {
        ending.recordEnd();
        throw c;
      }
      Map<String, Object> summary = succeeded(estimator, eval, dir, job, model, t0);
      ending.write(summary);
      return summary;
    }
  }

  private static Map<String, Object> succeeded(Dl4jEstimator estimator, Dataset<Row> eval, RunDirectory dir, FitJob job,
      Dl4jModel model, long t0) throws IOException {
    double trainSeconds = model.summary().elapsed().toMillis() / 1000.0;
    model.write().overwrite().save(dir.uri("model"));
    try (java.io.OutputStream zip = dir.create("model.dl4j.zip")) {
      ModelSerializer.writeModel(model.network(), zip, true);
    }
    Map<String, Object> summary = RunSummary.of(job.record());
    summary.put("trainSeconds", trainSeconds);
    long examples = model.summary().workerHistory().stream().collect(java.util.stream.Collectors.toMap(
        TaskProgress::index, TaskProgress::examples, Math::max)).values().stream().mapToLong(Long::longValue).sum();
    summary.put("examples", examples);
    summary.put("examplesPerSecond", Math.round(examples / Math.max(trainSeconds, 1e-9)));
    summary.put("recoveredFailures", model.summary().recoveredFailures());
    Map<String, Object> losses = new LinkedHashMap<>();
    int workers = (Integer) estimator.getOrDefault(estimator.numWorkers());
    for (int w = 0; w < workers; w++) {
      losses.put("worker" + w, model.summary().lastLoss(w));
    }
    summary.put("finalLoss", losses);
    if (eval != null) {
      summary.put("evaluation", Metrics.of(model, eval, estimator.getOrDefault(estimator.labelCol())));
      summary.put("lastEvaluatorReport", model.summary().lastEvaluation());
    }
    List<Map<String, Object>> tables = EmbeddingTablesSummary.of(estimator.getConfig(), dir.uri("model"),
        org.apache.spark.sql.SparkSession.active().sparkContext().hadoopConfiguration());
    if (tables != null) {
      summary.put("embeddingTables", tables);
    }
    summary.put("files", Map.of("model", "model/", "dl4j", "model.dl4j.zip", "metrics", "metrics.jsonl",
        "report", "report.html"));
    summary.put("provenance", model.provenance());
    summary.put("wallSeconds", Math.round((System.nanoTime() - t0) / 1e6) / 1000.0);
    return summary;
  }

  /** The one line a finished run prints. */
  @SuppressWarnings("unchecked")
  static String describe(Map<String, Object> summary, RunDirectory dir) {
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "sparkps: trained in %.1f s (%s examples/s)",
        (Double) summary.get("trainSeconds"), summary.get("examplesPerSecond")));
    Object evaluation = summary.get("evaluation");
    if (evaluation instanceof Map<?, ?> m && !m.isEmpty()) {
      Map<String, Double> metrics = (Map<String, Double>) m;
      String line = Metrics.line(metrics);
      if (line != null) {
        b.append(", evaluation ").append(line);
      }
    }
    return b.append("; run directory ").append(dir).toString();
  }
}
