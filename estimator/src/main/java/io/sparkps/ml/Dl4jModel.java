package io.sparkps.ml;

import io.sparkps.ml.data.Schemas;
import io.sparkps.ml.embedding.TableJoin;
import io.sparkps.ml.embedding.TableScoring;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.scoring.DenseScoring;
import io.sparkps.ml.scoring.ModelScoring;
import io.sparkps.spark.TaskProgress;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsWriter$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.ml.util.MLWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * A trained DL4J network as a Spark ML {@code Model}: {@code transform} adds, by batched inference
 * per partition with no parameter server and no barrier stage, the predicted class, the class
 * probabilities and the raw outputs (classifiers) or the predicted value(s) (regressors). Saved
 * and loaded with Spark ML's writers: params as metadata; the network's JSON and parameters, the
 * provenance and the training summary as data files.
 */
public final class Dl4jModel extends Model<Dl4jModel> implements MLWritable {
  private static final long serialVersionUID = 1L;
  private final String uid;
  private final String networkJson;
  private final float[] parameters;
  private Map<String, String> provenance = Map.of();
  private TrainingSummary summary;
  /** How the network reads its input: the features column, or an embedding model's tables. */
  private ModelScoring scoring = DenseScoring.INSTANCE;
  /** The start of {@link #toString()}, which reads the network's JSON once. */
  private transient String description;

  private final Param<String> featuresCol;
  private final Param<String> predictionCol;
  private final Param<String> probabilityCol;
  private final Param<String> rawPredictionCol;
  private final Param<String> tablesScoring;

  /**
   * A model without a network, for Spark's service registry only (Spark Connect lists its ML
   * operators through {@code ServiceLoader}, which needs these constructors): it refuses to score.
   * A usable model comes from {@link Dl4jEstimator#fit} or {@link #load}.
   */
  public Dl4jModel() {
    this(org.apache.spark.ml.util.Identifiable$.MODULE$.randomUID("Dl4jModel"));
  }

  /** A model without a network, named {@code uid}: see {@link #Dl4jModel()}. */
  public Dl4jModel(String uid) {
    this(uid, null, new float[0]);
  }

  Dl4jModel(String uid, String networkJson, float[] parameters) {
    this.uid = uid;
    this.networkJson = networkJson;
    this.parameters = parameters;
    featuresCol = new Param<>(this, "featuresCol", "features column name");
    predictionCol = new Param<>(this, "predictionCol", "prediction column name");
    probabilityCol = new Param<>(this, "probabilityCol", "class probabilities column name");
    rawPredictionCol = new Param<>(this, "rawPredictionCol", "raw output (before the output activation) column name");
    tablesScoring = new Param<>(this, "tablesScoring", "how an embedding model reads its tables to score: load "
        + "(each executor loads them), join (joins the rows' ids with them, for tables larger than an executor) or "
        + "auto (join when the tables' files exceed a quarter of an executor's heap)",
        org.apache.spark.ml.param.ParamValidators.inArray(TableJoin.MODES.toArray(new String[0])));
    setDefault(tablesScoring, "auto");
    setDefault(rawPredictionCol, "rawPrediction");
    setDefault(featuresCol, "features");
    setDefault(predictionCol, "prediction");
    setDefault(probabilityCol, "probability");
  }

  /** The input features column. */
  public Param<String> featuresCol() {
    return featuresCol;
  }

  /** The output column of the predicted class. */
  public Param<String> predictionCol() {
    return predictionCol;
  }

  /** The output column of the class probabilities. */
  public Param<String> probabilityCol() {
    return probabilityCol;
  }

  /** The output column of the raw outputs (classifiers). */
  public Param<String> rawPredictionCol() {
    return rawPredictionCol;
  }

  /**
   * How an embedding model reads its tables to score: "load" (each executor loads them once, for
   * tables an executor holds), "join" (the rows' ids are joined with the tables, never held whole by
   * any JVM) or "auto" (the default: join when the tables' files exceed a quarter of an executor's
   * heap).
   */
  public Param<String> tablesScoring() {
    return tablesScoring;
  }

  public Dl4jModel setTablesScoring(String mode) {
    set(tablesScoring, mode);
    return this;
  }

  @Override
  public String uid() {
    return uid;
  }

  /** How this model was made: versions, the estimator's params (seed included), input schema, time. */
  public Map<String, String> provenance() {
    return provenance;
  }

  /** What happened during training (also for a loaded model); null for a model saved without one. */
  public TrainingSummary summary() {
    return summary;
  }

  Dl4jModel withSummary(TrainingSummary summary) {
    this.summary = summary;
    return this;
  }

  Dl4jModel withScoring(ModelScoring scoring) {
    this.scoring = scoring;
    this.description = null;
    return this;
  }

  /** How the network reads its input when scoring: the features column, or an embedding model's tables. */
  public ModelScoring scoring() {
    return scoring;
  }

  /** Whether this model looks categorical columns up in embedding tables (saved beside it). */
  public boolean hasEmbeddings() {
    return scoring.readsTables();
  }

  Dl4jModel withProvenance(Map<String, String> provenance) {
    this.provenance = Map.copyOf(provenance);
    return this;
  }

  /**
   * The trained network, a new instance each call: a {@code MultiLayerNetwork} or a
   * {@code ComputationGraph}, as configured.
   */
  public org.deeplearning4j.nn.api.Model network() {
    Net net = Net.fromJson(networkJson);
    net.setParams(parameters);
    return net.model();
  }

  /** Whether the network is a classifier (by its output layer's loss); else a regressor. */
  public boolean isClassifier() {
    return Net.fromJson(networkJson).classification();
  }

  /** The network's outputs: a classifier's classes (2 for a binary one, or 1 sigmoid unit), a regressor's values. */
  public long numOutputs() {
    return Net.fromJson(networkJson).outputs();
  }

  /**
   * One line in the manner of Spark's own models: the uid, whether a classifier, the outputs, whether it
   * holds embedding tables, and, for a trained model, its steps, last loss and last evaluation. It is
   * also how a Spark Connect client learns these, since a Connect server lets clients call
   * {@code toString} on any ML object but no other method of a third-party model.
   */
  @Override
  public String toString() {
    if (networkJson == null) {
      return "Dl4jModel: uid=" + uid + ", no network";
    }
    if (description == null) {
      Net net = Net.fromJson(networkJson);
      description = "Dl4jModel: uid=" + uid + ", classifier=" + net.classification() + ", outputs=" + net.outputs()
          + ", parameters=" + parameters.length + ", embeddings=" + hasEmbeddings();
    }
    if (summary == null) {
      return description;
    }
    StringBuilder b = new StringBuilder(description);
    summary.workerHistory().stream().mapToLong(TaskProgress::step).max()
        .ifPresent(step -> b.append(", steps=").append(step));
    b.append(", elapsedSeconds=").append(summary.elapsed().toMillis() / 1000.0);
    double loss = summary.lastLoss(0);
    if (!Double.isNaN(loss)) {
      b.append(", loss=").append((float) loss);
    }
    new java.util.TreeMap<>(summary.lastEvaluation())
        .forEach((metric, value) -> b.append(", ").append(metric).append('=').append(value.floatValue()));
    return b.toString();
  }

  private Schemas.Outputs outputs(Net net) {
    return new Schemas.Outputs(net.classification(), net.outputs(), getOrDefault(predictionCol),
        getOrDefault(probabilityCol), getOrDefault(rawPredictionCol));
  }

  @Override
  public StructType transformSchema(StructType schema) {
    if (networkJson == null) {
      throw new IllegalStateException("Dl4jModel " + uid + " holds no network: a model to score with comes from "
          + "Dl4jEstimator.fit or Dl4jModel.load");
    }
    return scoring.transformSchema(schema, getOrDefault(featuresCol), outputs(Net.fromJson(networkJson)));
  }

  @Override
  public Dataset<Row> transform(Dataset<?> dataset) {
    StructType out = transformSchema(dataset.schema());
    return scoring.score(dataset, out, getOrDefault(featuresCol), getOrDefault(tablesScoring), networkJson,
        parameters);
  }

  @Override
  public Dl4jModel copy(ParamMap extra) {
    Dl4jModel copy = new Dl4jModel(uid, networkJson, parameters).withProvenance(provenance).withScoring(scoring);
    copy.summary = summary;
    return copyValues(copy, extra).setParent(parent());
  }

  @Override
  public MLWriter write() {
    Dl4jModel model = this;
    return new MLWriter() {
      @Override
      public void saveImpl(String path) {
        DefaultParamsWriter$.MODULE$.saveMetadata(model, path, sc(), scala.Option.empty(), scala.Option.empty());
        try {
          Path data = new Path(path, "data");
          FileSystem fs = data.getFileSystem(sc().hadoopConfiguration());
          try (DataOutputStream out = fs.create(new Path(data, "network.bin"), true)) {
            byte[] json = model.networkJson.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            out.writeInt(json.length);
            out.write(json);
            out.writeInt(model.parameters.length);
            for (float f : model.parameters) {
              out.writeFloat(f);
            }
          }
          java.util.Properties props = new java.util.Properties();
          props.putAll(model.provenance);
          try (java.io.OutputStream out = fs.create(new Path(data, "provenance.properties"), true)) {
            props.store(out, "how this SparkPS model was made");
          }
          if (model.summary != null) {
            try (DataOutputStream out = fs.create(new Path(data, "summary.json"), true)) {
              out.write(model.summary.toJson().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
          }
          model.scoring.save(data, sc().hadoopConfiguration());
        } catch (IOException e) {
          throw new UncheckedIOException("could not save the network under " + path, e);
        }
      }
    };
  }

  /** Reads a model saved with {@code write().save(path)}. */
  public static MLReader<Dl4jModel> read() {
    return new MLReader<>() {
      @Override
      public Dl4jModel load(String path) {
        DefaultParamsReader.Metadata meta = DefaultParamsReader$.MODULE$.loadMetadata(path, sc(), Dl4jModel.class.getName());
        try {
          Path file = new Path(new Path(path, "data"), "network.bin");
          FileSystem fs = file.getFileSystem(sc().hadoopConfiguration());
          long bytes = fs.getFileStatus(file).getLen();
          try (DataInputStream in = fs.open(file)) {
            // Sizes read from the file are checked against its length before anything that large is allocated.
            int jsonBytes = in.readInt();
            if (jsonBytes < 0 || jsonBytes > bytes - 8) {
              throw new IOException(file + " is damaged: its network JSON claims " + jsonBytes + " bytes of "
                  + bytes);
            }
            byte[] json = new byte[jsonBytes];
            in.readFully(json);
            int count = in.readInt();
            if (count < 0 || 4L * count != bytes - 8 - jsonBytes) {
              throw new IOException(file + " is damaged: it claims " + count + " parameters but holds "
                  + (bytes - 8 - jsonBytes) + " bytes for them");
            }
            float[] params = new float[count];
            for (int i = 0; i < params.length; i++) {
              params[i] = in.readFloat();
            }
            String networkJson = new String(json, java.nio.charset.StandardCharsets.UTF_8);
            long declared;
            try {
              declared = Net.declaredParams(networkJson);
            } catch (RuntimeException e) {
              throw new IOException(file + " is damaged: its network JSON is not a DL4J configuration (" + e.getMessage()
                  + ")", e);
            }
            if (declared != count) {
              throw new IOException(file + " is damaged: its network declares " + declared + " parameters but the file "
                  + "holds " + count);
            }
            Dl4jModel model = new Dl4jModel(meta.uid(), networkJson, params);
            meta.getAndSetParams(model, scala.Option.empty());
            Path provenance = new Path(new Path(path, "data"), "provenance.properties");
            if (fs.exists(provenance)) {
              java.util.Properties props = new java.util.Properties();
              try (java.io.InputStream pin = fs.open(provenance)) {
                props.load(pin);
              }
              Map<String, String> map = new java.util.TreeMap<>();
              props.forEach((k, v) -> map.put(String.valueOf(k), String.valueOf(v)));
              model.withProvenance(map);
            }
            model.withScoring(TableScoring.load(new Path(path, "data"), sc().hadoopConfiguration())
                .orElse(DenseScoring.INSTANCE));
            Path summary = new Path(new Path(path, "data"), "summary.json");
            if (fs.exists(summary)) {
              try (java.io.InputStream sin = fs.open(summary)) {
                model.withSummary(TrainingSummary.fromJson(
                    new String(sin.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)));
              }
            }
            return model;
          }
        } catch (IOException e) {
          throw new UncheckedIOException("could not load a Dl4jModel from " + path, e);
        }
      }
    };
  }

  /** Loads a model saved at {@code path}. */
  public static Dl4jModel load(String path) {
    return read().load(path);
  }
}
