package io.sparkps.ml.embedding;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model's tables loaded for scoring, per JVM: the cache keeps the two most recently used and drops
 * an older one when a third is loaded, but a scorer still holding the dropped tables goes on reading
 * them; they close when it is done.
 */
class EmbeddingModelsTest {
  @TempDir
  Path dir;

  private static final EmbeddingInputs INPUTS = new EmbeddingInputs(List.of(EmbeddingColumn.of("item", 2)
      .withInitScale(0.5)), List.of());
  private static final StructType SCHEMA = new StructType().add("item", DataTypes.LongType);

  /** The export of a fresh table that holds ids 1..10 (made by pulling them), as a fit leaves it. */
  private EmbeddingModels.Tables exported(String name) {
    PsToken token = PsToken.generate();
    ParameterServer server = ParameterServer.builder().setShardIndex(0).setToken(token)
        .optInProcess("models-test-" + name + "-" + System.nanoTime()).build().start();
    try (PsClient ps = PsClient.builder().setShards(List.of(server.address())).setToken(token).build()) {
      ps.createGroup(io.sparkps.ps.spec.ConsistencyGroup.async(EmbeddingModels.GROUP));
      ps.embeddingTable(INPUTS.tables().get(0).spec(EmbeddingModels.GROUP)).pull(
          java.util.stream.LongStream.rangeClosed(1, 10).map(id -> INPUTS.key(0, id)).toArray(), 0);
      String out = dir.resolve(name).toUri().toString();
      ps.export(out);
      return new EmbeddingModels.Tables(INPUTS, out, 1);
    } finally {
      server.close();
    }
  }

  private static float[] score(EmbeddingModels.Scorer scorer) {
    List<Row> batch = List.of(RowFactory.create(3L), RowFactory.create(7L));
    return scorer.input(batch).data().asFloat();
  }

  @Test
  void tablesDroppedFromTheCache_stayOpenForTheScorerHoldingThem_andCloseAfterIt() {
    EmbeddingModels.Tables a = exported("a");
    EmbeddingModels.Tables b = exported("b");
    EmbeddingModels.Tables c = exported("c");
    EmbeddingModels.Scorer holding = new EmbeddingModels.Scorer(a, SCHEMA);
    float[] before = score(holding);
    try (EmbeddingModels.Scorer second = new EmbeddingModels.Scorer(b, SCHEMA);
        EmbeddingModels.Scorer third = new EmbeddingModels.Scorer(c, SCHEMA)) {
      score(second);
      score(third); // a is dropped from the cache now
    }
    assertArrayEquals(before, score(holding), "still readable while held");
    holding.close();
    assertThrows(RuntimeException.class, () -> score(holding), "closed once its last scorer is done");
    try (EmbeddingModels.Scorer again = new EmbeddingModels.Scorer(a, SCHEMA)) {
      assertArrayEquals(before, score(again), "loaded afresh");
    }
  }
}
