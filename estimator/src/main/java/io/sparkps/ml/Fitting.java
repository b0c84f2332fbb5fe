package io.sparkps.ml;

import io.sparkps.ml.checkpoint.AutoCheckpoints;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.EmbeddingTraining;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.training.DenseInputs;
import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.ml.training.EvalWorker;
import io.sparkps.ml.training.ModelInputs;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.TaskProgress;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;

/**
 * One {@link Dl4jEstimator#fitAsync} from params to a running job: checks the data against the
 * network, builds the trainer's settings and the evaluator, launches, and turns the chief's
 * parameters into the {@link Dl4jModel} with its provenance and summary.
 */
final class Fitting {
  /** How long a deferred evaluator may score its copies once training has ended. */
  static final java.time.Duration DEFERRED_GRACE = java.time.Duration.ofMinutes(30);

  private Fitting() {}

  static FitJob start(Dl4jEstimator e, Dataset<?> dataset, Dataset<?> evaluation) {
    // checked before anything starts: a tracking URI that is no server is refused here
    io.sparkps.ml.tracking.MlflowTracking.Settings tracking = e.tracking(System.getenv());
    String tensorboard = e.getOrDefault(e.tensorboardLogDir()).trim();
    org.apache.hadoop.conf.Configuration hadoop = dataset.sparkSession().sparkContext().hadoopConfiguration();
    if (!tensorboard.isEmpty()) {
      io.sparkps.ml.tracking.TensorBoardLogging.runDir(tensorboard, "check", hadoop);
    }
    Net probe = e.probe(); // the one network this fit builds on the driver
    e.transformSchema(dataset.schema(), probe);
    AutoCheckpoints.Choice checkpoints = AutoCheckpoints.choose(dataset.sparkSession().sparkContext(),
        e.getConfig().checkpointDir());
    TrainingConfig config = e.getConfig().toBuilder().optCheckpointDir(checkpoints.dir()).build();
    ClusterSpec spec = config.clusterSpec().optEvaluator(evaluation != null)
        .optMetricsEvery(io.sparkps.spark.SparkPsConf.METRICS_EVERY_STEPS.get(dataset.sparkSession().conf()))
        // a deferred evaluator scores its copies after training: up to 256 MiB of them
        .optEvaluatorGrace(config.evalDeferred() ? DEFERRED_GRACE : null).build();
    String json = e.getOrDefault(e.networkJson());
    EmbeddingInputs inputs = e.embeddingInputs();
    // The one place a fit tells an embedding model from a dense one: the trainer only sees its inputs.
    // (The trained tables outlive the fit, in the model: never below the fit's own checkpoint directory.)
    ModelInputs model = inputs == null ? DenseInputs.of(dataset.sparkSession())
        : EmbeddingTraining.of(dataset.sparkSession(), inputs, checkpoints.automatic() ? null : checkpoints.dir());
    EvalWorker evaluator = evaluation == null ? null : evalWorker(e, config, evaluation, probe, model);
    // What the fit holds until it ends: the evaluator's data, and its own checkpoints (they served its faults).
    Runnable release = () -> {
      if (evaluator != null) {
        evaluator.release();
      }
      AutoCheckpoints.delete(checkpoints);
    };
    Dl4jTrainer.Launch launch;
    try {
      launch = Dl4jTrainer.launch(dataset.sparkSession(), spec, dataset.toDF(), json, config, model, evaluator, probe,
          checkpoints.automatic());
    } catch (RuntimeException failure) {
      release.run();
      throw failure;
    }
    launch.job().addListener(new ProgressListener() {
      @Override
      public void onProgress(TaskProgress progress) {}

      @Override
      public void onEnd(JobStatus status, Throwable failure) {
        release.run();
      }
    });
    e.listeners().forEach(launch.job()::addListener);
    io.sparkps.ml.tracking.MlflowTracking tracker = track(tracking, e, config, dataset, json, launch);
    io.sparkps.ml.tracking.TensorBoardLogging events = null;
    if (!tensorboard.isEmpty()) {
      events = io.sparkps.ml.tracking.TensorBoardLogging.start(
          io.sparkps.ml.tracking.TensorBoardLogging.runDir(tensorboard, launch.job().runId(), hadoop), hadoop);
      int histogramSteps = (Integer) e.getOrDefault(e.tensorboardHistogramSteps());
      if (histogramSteps > 0) {
        events.histograms(variableValues(launch, probe, config.group(config.numWorkers()).name()), histogramSteps);
      }
      launch.job().addListener(events);
    }
    Map<String, String> provenance = new TreeMap<>(Provenance.of(e, dataset.schema(), dataset.sparkSession().version()));
    provenance.putAll(e.experimentRecord());
    return new FitJob(launch, tracker, events, result -> {
      Dl4jModel trained = new Dl4jModel(e.uid(), json, result.chief()).withProvenance(provenance)
          .withSummary(TrainingSummary.of(result))
          .withScoring(model.scoring(spec.numPs(), config.tablesGroup(config.numWorkers())));
      trained.set(trained.featuresCol(), config.featuresCol())
          .set(trained.predictionCol(), e.getOrDefault(e.predictionCol()))
          .set(trained.probabilityCol(), e.getOrDefault(e.probabilityCol()))
          .set(trained.rawPredictionCol(), e.getOrDefault(e.rawPredictionCol()));
      return trained.setParent(e);
    }, dataset.sparkSession());
  }

  /**
   * The network's variables as they stand on the parameter servers, by name, for TensorBoard's
   * histograms: read with their own client, each call bounded; none once the run is not training.
   */
  private static java.util.function.Supplier<Map<String, float[]>> variableValues(Dl4jTrainer.Launch launch, Net probe,
      String group) {
    io.sparkps.ml.network.NetworkVariables variables = io.sparkps.ml.network.NetworkVariables.of(probe, group, false);
    return () -> launch.job().readPs(java.time.Duration.ofSeconds(30), ps -> {
      Map<String, org.nd4j.linalg.api.ndarray.INDArray> views = variables.views(probe.params().ulike());
      ps.pullInto(views);
      Map<String, float[]> out = new java.util.LinkedHashMap<>();
      views.forEach((name, view) -> out.put(name, view.toFloatVector()));
      return out;
    }).orElse(Map.of());
  }

  /**
   * Tracks the fit in MLflow when a tracking URI is given (the estimator's Param or {@code
   * MLFLOW_TRACKING_URI}); null when none is. Its params: every training option, the network and
   * its parameter count, the data's schema and row count, the run's id.
   */
  private static io.sparkps.ml.tracking.MlflowTracking track(io.sparkps.ml.tracking.MlflowTracking.Settings settings,
      Dl4jEstimator e, TrainingConfig config, Dataset<?> dataset, String json, Dl4jTrainer.Launch launch) {
    if (!settings.on()) {
      return null;
    }
    Map<String, String> params = new java.util.LinkedHashMap<>();
    for (io.sparkps.ml.param.TrainingOption<?> o : io.sparkps.ml.param.TrainingOptions.ALL) {
      Object value = o.paramValue(config);
      params.put(o.name(), value instanceof String[] a ? String.join(",", a) : String.valueOf(value));
    }
    params.put("network", e.isSet(e.network()) || !e.isSet(e.networkJson()) ? e.getOrDefault(e.network())
        : "networkJson");
    try {
      params.put("networkParameters", Long.toString(io.sparkps.ml.network.Net.declaredParams(json)));
    } catch (RuntimeException notCounted) {
      // a network the count does not know; its Param says what it is
    }
    params.put("dataSchema", dataset.schema().simpleString());
    params.put("dataRows", Long.toString(launch.rows()));
    params.put("stepsPerEpoch", Integer.toString(launch.stepsPerEpoch()));
    params.put("sparkpsRunId", launch.job().runId());
    io.sparkps.ml.tracking.MlflowTracking tracking = io.sparkps.ml.tracking.MlflowTracking.start(settings, params,
        System.getenv());
    launch.job().addListener(tracking);
    return tracking;
  }

  /** The evaluator of {@code evaluation}: its rows checked like training rows, then broadcast. */
  private static EvalWorker evalWorker(Dl4jEstimator e, TrainingConfig config, Dataset<?> evaluation, Net probe,
      ModelInputs model) {
    e.transformSchema(evaluation.schema(), probe);
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(evaluation.sparkSession().sparkContext());
    return new EvalWorker(e.getOrDefault(e.networkJson()), model.heldOut(sc, evaluation.toDF(), config, probe,
        config.evalDeferred()), (long) (1000 * config.evalEverySeconds()), config.evalDeferred());
  }
}
