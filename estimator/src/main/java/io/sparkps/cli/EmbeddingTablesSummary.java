package io.sparkps.cli;

import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ps.client.ExportedTables;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * An embedding model's tables as a run's record lists them ({@code summary.json}'s {@code
 * embeddingTables}, the report's table): each categorical column with its settings, the ps table
 * it trains (columns configured alike share one) and that table's rows, counted in the saved
 * model's files when they are small enough to read at the run's end.
 */
final class EmbeddingTablesSummary {
  /** The saved tables' bytes up to which their rows are counted (beyond, the rows are left out). */
  static final long COUNTED_BYTES = 512L << 20;

  private EmbeddingTablesSummary() {}

  /** The columns of {@code config}'s embedding model saved at {@code modelDir}; null for a dense model. */
  static List<Map<String, Object>> of(TrainingConfig config, String modelDir, Configuration hadoop) {
    if (!config.hasEmbeddings()) {
      return null;
    }
    EmbeddingInputs inputs = new EmbeddingInputs(config.embeddingColumns(), config.numericCols());
    Map<String, Long> rows = rows(new Path(new Path(modelDir, "data"), "tables"), config.numPs(), hadoop);
    List<Map<String, Object>> out = new ArrayList<>();
    for (EmbeddingInputs.Table t : inputs.tables()) {
      for (int c : t.columns()) {
        EmbeddingColumn column = config.embeddingColumns().get(c);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("column", column.column());
        m.put("dim", column.dim());
        m.put("optimizer", column.optimizer().name());
        m.put("learningRate", column.learningRate());
        m.put("minCount", column.minCount());
        m.put("buckets", column.buckets());
        m.put("table", t.name());
        m.put("rows", rows.get(t.name()));
        out.add(m);
      }
    }
    return out;
  }

  /** Each table's rows (its default rows left out) in the saved files below {@code dir}; none when too large or unreadable. */
  private static Map<String, Long> rows(Path dir, int numPs, Configuration hadoop) {
    Map<String, Long> rows = new HashMap<>();
    try {
      FileSystem fs = dir.getFileSystem(hadoop);
      if (!fs.exists(dir) || fs.getContentSummary(dir).getLength() > COUNTED_BYTES) {
        return rows;
      }
      for (int shard = 0; shard < numPs; shard++) {
        try (ExportedTables.Rows r = ExportedTables.open(dir.toString(), shard)) {
          while (r.next()) {
            if (r.id() != Long.MIN_VALUE) {
              rows.merge(tableName(r.table()), 1L, Long::sum);
            }
          }
        }
      }
      return rows;
    } catch (IOException | RuntimeException e) {
      return new HashMap<>();
    }
  }

  /** A ps table's name without its consistency group's prefix, as {@link EmbeddingInputs.Table#name()} has it. */
  private static String tableName(String psName) {
    return psName.substring(psName.lastIndexOf('/') + 1);
  }
}
