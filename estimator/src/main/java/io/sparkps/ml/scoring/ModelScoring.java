package io.sparkps.ml.scoring;

import io.sparkps.ml.data.Schemas;
import java.io.IOException;
import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;

/**
 * How a trained model's network gets its input from a DataFrame's rows when it scores them, with
 * no parameter server: a dense network reads a features column ({@link DenseScoring}); an
 * embedding model looks its categorical columns up in its trained tables
 * ({@code io.sparkps.ml.embedding}). The model holds one and never asks which.
 */
public interface ModelScoring extends Serializable {
  /** Whether the network's input is read from embedding tables kept beside its parameters. */
  boolean readsTables();

  /** The scored rows' schema: {@code schema} checked for the input's columns, with {@code outputs} added. */
  StructType transformSchema(StructType schema, String featuresCol, Schemas.Outputs outputs);

  /**
   * The rows of {@code dataset} with the scores of the network {@code json} with parameters
   * {@code params}, as {@code out} (from {@link #transformSchema}) says; embedding tables are read as
   * {@code tablesScoring} says (the model's Param).
   */
  Dataset<Row> score(Dataset<?> dataset, StructType out, String featuresCol, String tablesScoring, String json,
      float[] params);

  /** Writes what the model keeps beside its network and parameters into its data directory {@code data}. */
  void save(Path data, Configuration conf) throws IOException;
}
