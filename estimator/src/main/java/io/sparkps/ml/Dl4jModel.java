package io.sparkps.ml;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.ml.util.DefaultParamsWriter$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.ml.util.MLWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A trained DL4J network as a Spark ML {@code Model}: {@code transform} adds the predicted class
 * and the class probabilities by batched inference per partition, with no parameter server and no
 * barrier stage. Saved and loaded with Spark ML's writers (params as metadata, the network's JSON
 * and parameters as data files).
 */
public final class Dl4jModel extends Model<Dl4jModel> implements MLWritable {
  private static final long serialVersionUID = 1L;
  private static final int BATCH = 256;
  private final String uid;
  private final String networkJson;
  private final float[] parameters;
  private Map<String, String> provenance = Map.of();
  private transient TrainingSummary summary;

  private final Param<String> featuresCol;
  private final Param<String> predictionCol;
  private final Param<String> probabilityCol;

  Dl4jModel(String uid, String networkJson, float[] parameters) {
    this.uid = uid;
    this.networkJson = networkJson;
    this.parameters = parameters;
    featuresCol = new Param<>(this, "featuresCol", "features column name");
    predictionCol = new Param<>(this, "predictionCol", "prediction column name");
    probabilityCol = new Param<>(this, "probabilityCol", "class probabilities column name");
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

  @Override
  public String uid() {
    return uid;
  }

  /** How this model was made: versions, the estimator's params (seed included), input schema, time. */
  public Map<String, String> provenance() {
    return provenance;
  }

  /** What happened during training, for a model fitted in this JVM; null for a loaded one. */
  public TrainingSummary summary() {
    return summary;
  }

  Dl4jModel withSummary(TrainingSummary summary) {
    this.summary = summary;
    return this;
  }

  Dl4jModel withProvenance(Map<String, String> provenance) {
    this.provenance = Map.copyOf(provenance);
    return this;
  }

  /** The trained network (a new instance each call). */
  public MultiLayerNetwork network() {
    MultiLayerNetwork net = Dl4jTrainer.network(networkJson);
    net.setParams(Nd4j.createFromArray(parameters).reshape(net.params().shape()));
    return net;
  }

  @Override
  public StructType transformSchema(StructType schema) {
    return Schemas.withPredictions(schema, getOrDefault(featuresCol), getOrDefault(predictionCol),
        getOrDefault(probabilityCol));
  }

  @Override
  public Dataset<Row> transform(Dataset<?> dataset) {
    StructType out = transformSchema(dataset.schema());
    int featureIndex = dataset.schema().fieldIndex(getOrDefault(featuresCol));
    String json = networkJson;
    float[] params = parameters;
    JavaRDD<Row> rows = dataset.toDF().javaRDD().mapPartitions(it -> predict(it, featureIndex, json, params));
    return dataset.sparkSession().createDataFrame(rows, out);
  }

  private static Iterator<Row> predict(Iterator<Row> rows, int featureIndex, String json, float[] params) {
    MultiLayerNetwork net = Dl4jTrainer.network(json);
    net.setParams(Nd4j.createFromArray(params).reshape(net.params().shape()));
    List<Row> out = new ArrayList<>();
    List<Row> batch = new ArrayList<>(BATCH);
    while (rows.hasNext()) {
      batch.add(rows.next());
      if (batch.size() == BATCH || !rows.hasNext()) {
        double[][] x = new double[batch.size()][];
        for (int i = 0; i < x.length; i++) {
          x[i] = features(batch.get(i).get(featureIndex));
        }
        INDArray p = net.output(Nd4j.createFromArray(x).castTo(org.nd4j.linalg.api.buffer.DataType.FLOAT));
        INDArray best = p.argMax(1);
        for (int i = 0; i < x.length; i++) {
          Row r = batch.get(i);
          Object[] values = new Object[r.length() + 2];
          for (int c = 0; c < r.length(); c++) {
            values[c] = r.get(c);
          }
          values[r.length()] = (double) best.getLong(i);
          values[r.length() + 1] = Vectors.dense(p.getRow(i).toDoubleVector());
          out.add(RowFactory.create(values));
        }
        batch.clear();
      }
    }
    return out.iterator();
  }

  private static double[] features(Object value) {
    if (value instanceof Vector v) {
      return v.toArray();
    }
    List<?> list = scala.collection.JavaConverters.seqAsJavaList((scala.collection.Seq<?>) value);
    double[] out = new double[list.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = ((Number) list.get(i)).doubleValue();
    }
    return out;
  }

  @Override
  public Dl4jModel copy(ParamMap extra) {
    Dl4jModel copy = new Dl4jModel(uid, networkJson, parameters);
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
          try (DataInputStream in = fs.open(file)) {
            byte[] json = new byte[in.readInt()];
            in.readFully(json);
            float[] params = new float[in.readInt()];
            for (int i = 0; i < params.length; i++) {
              params[i] = in.readFloat();
            }
            Dl4jModel model = new Dl4jModel(meta.uid(), new String(json, java.nio.charset.StandardCharsets.UTF_8), params);
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
