package io.sparkps.ml.tracking;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.Transformer;
import org.apache.spark.ml.util.Identifiable$;
import org.apache.spark.sql.SparkSession;
import org.nd4j.shade.jackson.core.JsonProcessingException;
import org.nd4j.shade.jackson.databind.ObjectMapper;

/**
 * The description of a Spark ML model as an MLflow model of the {@code spark} flavor: the {@code
 * MLmodel} file beside the model's directory {@code sparkml/} (a {@code PipelineModel}), as MLflow's
 * {@code mlflow.spark.log_model} writes it, so that {@code mlflow.spark.load_model}, {@code
 * mlflow.pyfunc.load_model} and the model registry take it. The same description as JSON is what the
 * tracking server records as the run's logged model.
 */
final class SparkFlavor {
  /** The model's directory within the MLflow model, as MLflow names it. */
  static final String DATA = "sparkml";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final DateTimeFormatter CREATED = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS")
      .withZone(ZoneOffset.UTC);

  private final Map<String, Object> fields = new LinkedHashMap<>();

  /**
   * The model logged at {@code artifactPath} of run {@code runId}, saved by Spark {@code sparkVersion}
   * at {@code created}; {@code metadata} is kept with it (MLflow shows it as the model's metadata).
   */
  SparkFlavor(String artifactPath, String runId, String sparkVersion, Instant created, String uuid,
      Map<String, String> metadata) {
    Map<String, Object> spark = new LinkedHashMap<>();
    spark.put("model_class", "pyspark.ml.pipeline.PipelineModel");
    spark.put("model_data", DATA);
    spark.put("pyspark_version", sparkVersion);
    Map<String, Object> pyfunc = new LinkedHashMap<>();
    pyfunc.put("data", DATA);
    pyfunc.put("loader_module", "mlflow.spark");
    Map<String, Object> flavors = new LinkedHashMap<>();
    flavors.put("python_function", pyfunc);
    flavors.put("spark", spark);
    fields.put("artifact_path", artifactPath);
    fields.put("flavors", flavors);
    fields.put("metadata", new LinkedHashMap<>(metadata));
    fields.put("model_uuid", uuid);
    fields.put("run_id", runId);
    fields.put("utc_time_created", CREATED.format(created));
  }

  /** The {@code MLmodel} file: YAML, every string quoted. */
  String yaml() {
    StringBuilder b = new StringBuilder();
    yaml(b, fields, "");
    return b.toString();
  }

  @SuppressWarnings("unchecked")
  private static void yaml(StringBuilder b, Map<String, Object> map, String indent) {
    for (Map.Entry<String, Object> e : map.entrySet()) {
      b.append(indent).append(e.getKey()).append(':');
      if (e.getValue() instanceof Map<?, ?> inner) {
        if (inner.isEmpty()) {
          b.append(" {}\n");
        } else {
          b.append('\n');
          yaml(b, (Map<String, Object>) inner, indent + "  ");
        }
      } else {
        b.append(' ').append(quoted(String.valueOf(e.getValue()))).append('\n');
      }
    }
  }

  /** A YAML double-quoted scalar: JSON's escapes are YAML's. */
  private static String quoted(String s) {
    try {
      return JSON.writeValueAsString(s);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The same description as JSON (what {@code runs/log-model} takes). */
  String json() {
    try {
      return JSON.writeValueAsString(fields);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** What was uploaded. */
  record Logged(long files, long bytes) {}

  /**
   * Logs {@code model} as MLflow model {@code path} of run {@code runId}: saved as a {@code
   * PipelineModel} (the model its one stage, unless it is a pipeline) to a scratch directory of the
   * session's default file system (Spark's writers run jobs whose files land where executors
   * write), each file uploaded streamed, then {@code MLmodel} and {@code requirements.txt}, then the
   * model recorded as the run's; the scratch copy is removed whatever happens.
   */
  static Logged log(MlflowRest rest, String artifactUri, String runId, String path, Transformer model,
      SparkSession spark, Map<String, String> metadata) throws IOException, InterruptedException {
    FileSystem fs = FileSystem.get(spark.sparkContext().hadoopConfiguration());
    Path scratch = scratchDir(fs);
    try {
      // (PipelineModel's constructor is Spark's own, public in its bytecode; mlflow.spark.log_model wraps one too)
      PipelineModel pipeline = model instanceof PipelineModel p ? p
          : new PipelineModel(Identifiable$.MODULE$.randomUID("PipelineModel"), List.of(model));
      Path data = new Path(scratch, DATA);
      pipeline.write().save(data.toString());
      long files = 0;
      long bytes = 0;
      String root = fs.makeQualified(data).toUri().getPath();
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(data, true);
      while (it.hasNext()) {
        LocatedFileStatus f = it.next();
        String name = f.getPath().getName();
        if (name.startsWith(".") && name.endsWith(".crc")) {
          continue; // the local file system's checksums: no part of the model
        }
        Path file = f.getPath();
        String relative = file.toUri().getPath().substring(root.length() + 1);
        rest.putArtifact(artifactUri, path + "/" + DATA + "/" + relative, () -> fs.open(file), f.getLen());
        files++;
        bytes += f.getLen();
      }
      SparkFlavor flavor = new SparkFlavor(path, runId, spark.version(), Instant.now(),
          UUID.randomUUID().toString().replace("-", ""), metadata);
      rest.putArtifact(artifactUri, path + "/MLmodel", flavor.yaml().getBytes(StandardCharsets.UTF_8));
      rest.putArtifact(artifactUri, path + "/requirements.txt",
          requirements(spark.version()).getBytes(StandardCharsets.UTF_8));
      rest.logModel(runId, flavor.json());
      return new Logged(files, bytes);
    } finally {
      try {
        fs.delete(scratch, true);
      } catch (IOException e) {
        // the model's fate is the upload's: a scratch copy left behind is only said
        org.slf4j.LoggerFactory.getLogger(SparkFlavor.class).warn("MLflow: the model's scratch copy {} was not "
            + "removed ({})", scratch, e.getMessage());
      }
    }
  }

  /**
   * Where a model is written before it is uploaded: the JVM's temporary directory when the default
   * file system is the local one, else {@code .sparkps/} in the user's home directory there.
   */
  private static Path scratchDir(FileSystem fs) {
    String name = "sparkps-mlflow-model-" + UUID.randomUUID();
    if ("file".equals(fs.getUri().getScheme())) {
      return fs.makeQualified(new Path(System.getProperty("java.io.tmpdir"), name));
    }
    return new Path(new Path(fs.getHomeDirectory(), ".sparkps"), name);
  }

  /** The Python packages that load the model: PySpark of the version that saved it. */
  static String requirements(String sparkVersion) {
    return "pyspark==" + sparkVersion + "\n";
  }
}
