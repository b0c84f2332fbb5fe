package io.sparkps.ml;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Models saved by one build for another to load: {@code saved-models/spark-<version>/} (test
 * resources) holds a small classifier saved with {@code Dl4jModel.write()} by the build for that
 * Spark, and {@code probabilities.csv}, what it predicted for {@link #inputs} there.
 *
 * <p>To add the fixture of a build, after {@code mvn install -DskipTests [-Pspark-4]}:
 * {@code mvn -pl estimator [-Pspark-4] test-compile exec:exec@saved-model}.
 */
public final class SavedModelFixtures {
  private SavedModelFixtures() {}

  /** The inputs every fixture is scored on: 12 points of 5 features, fixed. */
  static Dataset<Row> inputs(SparkSession spark) {
    Random random = new Random(2026);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      double[] x = new double[5];
      for (int j = 0; j < x.length; j++) {
        x[j] = random.nextGaussian() * 1.5;
      }
      rows.add(RowFactory.create(i, Vectors.dense(x)));
    }
    StructType schema = new StructType().add("id", DataTypes.IntegerType).add("features", new VectorUDT());
    return spark.createDataFrame(rows, schema);
  }

  /** The probabilities of {@code model} for {@link #inputs}, one CSV line per input in id order. */
  static List<String> probabilities(Dl4jModel model, SparkSession spark) {
    return model.transform(inputs(spark)).orderBy("id").collectAsList().stream()
        .map(r -> ((Vector) r.getAs("probability")).toDense().values())
        .map(p -> java.util.Arrays.stream(p).mapToObj(Double::toString).collect(Collectors.joining(",")))
        .toList();
  }

  /** Saves this build's fixture under {@code args[0]/spark-<version>}. */
  public static void main(String[] args) throws Exception {
    SparkSession spark = LocalSpark.start(2, "saved-model-fixture");
    try {
      MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder().seed(7)
          .dataType(DataType.FLOAT).list()
          .layer(new DenseLayer.Builder().nIn(5).nOut(8).activation(Activation.TANH).build())
          .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(8).nOut(3)
              .activation(Activation.SOFTMAX).build())
          .build());
      net.init();
      Dl4jModel model = new Dl4jModel("dl4j-fixture", net.getLayerWiseConfigurations().toJson(),
          net.params().toFloatVector()).withProvenance(Map.of("fixture", "saved by the build for Spark " + spark.version()));
      Path dir = Path.of(args[0]).resolve("spark-" + spark.version());
      model.write().overwrite().save(dir.resolve("model").toUri().toString());
      Files.write(dir.resolve("probabilities.csv"), probabilities(model, spark));
      System.out.println("saved " + dir);
    } finally {
      spark.stop();
    }
    System.exit(0);
  }
}
