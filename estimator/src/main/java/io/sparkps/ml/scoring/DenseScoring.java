package io.sparkps.ml.scoring;

import io.sparkps.ml.data.Schemas;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * A dense network's scoring: the features column read as it stands. Where Spark's internal rows
 * are reachable, they are scored in their binary form ({@link Predictions#internal}); elsewhere (a
 * Spark Connect plan, say) as Spark's external rows.
 */
public final class DenseScoring implements ModelScoring {
  private static final long serialVersionUID = 1L;
  /** The only one: it holds nothing. */
  public static final DenseScoring INSTANCE = new DenseScoring();

  private DenseScoring() {}

  @Override
  public boolean readsTables() {
    return false;
  }

  @Override
  public StructType transformSchema(StructType schema, String featuresCol, Schemas.Outputs outputs) {
    return Schemas.withPredictions(schema, featuresCol, outputs);
  }

  @Override
  public Dataset<Row> score(Dataset<?> dataset, StructType out, String featuresCol, String tablesScoring, String json,
      float[] params) {
    StructType in = dataset.schema();
    int featureIndex = in.fieldIndex(featuresCol);
    DataType featureType = in.fields()[featureIndex].dataType();
    Optional<RDD<InternalRow>> internal = InternalFrames.rows(dataset);
    if (internal.isPresent()) {
      Optional<Dataset<Row>> scored = InternalFrames.frame(dataset.sparkSession(), internal.get().toJavaRDD()
          .mapPartitions(it -> Predictions.internal(it, featureIndex, featureType, out, json, params)).rdd(), out);
      if (scored.isPresent()) {
        return scored.get();
      }
    }
    return dataset.sparkSession().createDataFrame(dataset.toDF().javaRDD().mapPartitions(it -> Predictions.of(it,
        batch -> Predictions.denseInput(batch, featureIndex), json, params, () -> { })), out);
  }

  @Override
  public void save(Path data, Configuration conf) {
    // the network and its parameters are all a dense model keeps
  }

  /** The one instance, also after Java serialization. */
  private Object readResolve() {
    return INSTANCE;
  }
}
