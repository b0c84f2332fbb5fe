package io.sparkps.ml;

import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Minibatches;
import io.sparkps.spark.ClusterSpec;
import io.sparkps.spark.JobStatus;
import io.sparkps.spark.ProgressListener;
import io.sparkps.spark.TaskProgress;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

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
    io.sparkps.ml.embedding.EmbeddingInputs inputs = e.embeddingInputs();
    // (The trained tables outlive the fit, in the model: never below the fit's own checkpoint directory.)
    EmbeddingModels.Fit tables = inputs == null ? null
        : EmbeddingModels.fit(dataset.sparkSession(), inputs, checkpoints.automatic() ? null : checkpoints.dir());
    EvalWorker evaluator = evaluation == null ? null
        : inputs != null ? embeddingEvalWorker(e, config, evaluation, probe, inputs)
        : evalWorker(e, config, evaluation, probe);
    // What the fit holds until it ends: the evaluator's data, and its own checkpoints (they served its faults).
    Runnable release = () -> {
      if (evaluator != null) {
        evaluator.release();
      }
      AutoCheckpoints.delete(checkpoints);
    };
    Dl4jTrainer.Launch launch;
    try {
      launch = Dl4jTrainer.launch(dataset.sparkSession(), spec, dataset.toDF(), json, config, evaluator, probe, tables,
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
    Map<String, String> provenance = new TreeMap<>(Provenance.of(e, dataset.schema(), dataset.sparkSession().version()));
    provenance.putAll(e.experimentRecord());
    return new FitJob(launch, result -> {
      Dl4jModel model = new Dl4jModel(e.uid(), json, result.chief()).withProvenance(provenance)
          .withSummary(TrainingSummary.of(result))
          .withTables(tables == null ? null : new EmbeddingModels.Tables(inputs, tables.tablesDir(), spec.numPs(),
          config.tablesGroup(config.numWorkers())));
      model.set(model.featuresCol(), config.featuresCol()).set(model.predictionCol(), e.getOrDefault(e.predictionCol()))
          .set(model.probabilityCol(), e.getOrDefault(e.probabilityCol()))
          .set(model.rawPredictionCol(), e.getOrDefault(e.rawPredictionCol()));
      return model.setParent(e);
    });
  }

  /** An embedding model's evaluator: the held-out rows read into categorical rows, then broadcast. */
  private static EvalWorker embeddingEvalWorker(Dl4jEstimator e, TrainingConfig config, Dataset<?> evaluation, Net probe,
      io.sparkps.ml.embedding.EmbeddingInputs inputs) {
    e.transformSchema(evaluation.schema(), probe);
    List<Row> rows = new EmbeddingModels.Fit(inputs, null).select(evaluation.toDF(), config.labelCol()).collectAsList();
    if (rows.isEmpty()) {
      throw new IllegalArgumentException("the evaluation DataFrame is empty: give held-out rows or no evaluation data");
    }
    io.sparkps.ml.embedding.CategoricalRows held = EmbeddingStep.read(rows.iterator(), inputs, probe.classification(),
        (int) probe.outputs(), -1);
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(evaluation.sparkSession().sparkContext());
    return new EvalWorker(e.getOrDefault(e.networkJson()), sc.broadcast(new EvalWorker.Rows(null, null, held.size())),
        (long) (1000 * config.evalEverySeconds()), config.evalDeferred(), sc.broadcast(held),
        config.tablesGroup(config.numWorkers()));
  }

  /** The evaluator of {@code evaluation}: its rows checked like training rows, then broadcast. */
  private static EvalWorker evalWorker(Dl4jEstimator e, TrainingConfig config, Dataset<?> evaluation, Net probe) {
    e.transformSchema(evaluation.schema(), probe);
    String featuresCol = config.featuresCol();
    String labelCol = config.labelCol();
    LabelKind kind = Schemas.labelKind(evaluation.schema(), labelCol, probe.classification(), probe.outputs());
    List<Row> rows = evaluation.toDF().select(featuresCol, labelCol).collectAsList();
    if (rows.isEmpty()) {
      throw new IllegalArgumentException("the evaluation DataFrame is empty: give held-out rows or no evaluation data");
    }
    Minibatches checked = Minibatches.of(rows.iterator(), -1, featuresCol, labelCol, (int) probe.inputWidth(), kind,
        (int) probe.outputs());
    Broadcast<EvalWorker.Rows> broadcast = JavaSparkContext.fromSparkContext(evaluation.sparkSession().sparkContext())
        .broadcast(new EvalWorker.Rows(checked.features(), checked.labels(), checked.size()));
    return new EvalWorker(e.getOrDefault(e.networkJson()), broadcast,
        (long) (1000 * config.evalEverySeconds()), config.evalDeferred());
  }
}
