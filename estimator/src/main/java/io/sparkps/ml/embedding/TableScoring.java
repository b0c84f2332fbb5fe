package io.sparkps.ml.embedding;

import io.sparkps.ml.data.Schemas;
import io.sparkps.ml.scoring.ModelScoring;
import io.sparkps.ml.scoring.Predictions;
import java.io.IOException;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.TaskCompletionListener;

/**
 * An embedding model's scoring: each row's ids looked up in the model's trained tables, either
 * loaded once per executor ({@link EmbeddingModels.Scorer}) or joined with the rows for tables
 * larger than an executor ({@link TableJoin}), as the model's {@code tablesScoring} says.
 *
 * @param tables the model's tables (saved beside it)
 */
public record TableScoring(EmbeddingModels.Tables tables) implements ModelScoring {
  /** The scoring of the model whose data directory is {@code data}, when it holds tables. */
  public static Optional<ModelScoring> load(Path data, Configuration conf) throws IOException {
    return Optional.ofNullable(EmbeddingModels.load(data, conf)).map(TableScoring::new);
  }

  @Override
  public boolean readsTables() {
    return true;
  }

  @Override
  public StructType transformSchema(StructType schema, String featuresCol, Schemas.Outputs outputs) {
    tables.inputs().check(schema);
    return Schemas.addOutputs(schema, outputs);
  }

  @Override
  public Dataset<Row> score(Dataset<?> dataset, StructType out, String featuresCol, String tablesScoring, String json,
      float[] params) {
    EmbeddingModels.Tables t = tables;
    if (TableJoin.joins(tablesScoring, t, dataset.sparkSession())) {
      JavaRDD<Row> rows = TableJoin.score(dataset.toDF(), t, (it, input) -> Predictions.of(it, input, json, params,
          () -> { }));
      return dataset.sparkSession().createDataFrame(rows, out);
    }
    StructType in = dataset.schema();
    JavaRDD<Row> rows = dataset.toDF().javaRDD().mapPartitions(it -> {
      // The scorer holds the loaded tables until the partition is scored, or its task ends first.
      EmbeddingModels.Scorer scorer = new EmbeddingModels.Scorer(t, in);
      Runnable release = new Predictions.Once(scorer::close);
      TaskContext task = TaskContext.get();
      if (task != null) {
        task.addTaskCompletionListener((TaskCompletionListener) ctx -> release.run());
      }
      return Predictions.of(it, scorer::input, json, params, release);
    });
    return dataset.sparkSession().createDataFrame(rows, out);
  }

  @Override
  public void save(Path data, Configuration conf) throws IOException {
    EmbeddingModels.save(tables, data, conf);
  }
}
