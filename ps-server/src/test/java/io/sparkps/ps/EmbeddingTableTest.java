package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Embedding tables over real sockets: rows by id on two ps, created as ids arrive, bounded per ps. */
class EmbeddingTableTest {
  private TestCluster cluster;
  private PsClient client;

  @BeforeEach
  void start() {
    cluster = TestCluster.netty(2, false);
    client = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(false));
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  private static EmbeddingSpec.Builder spec(String name) {
    return EmbeddingSpec.builder().setName(name).setDim(4).optOptimizer("SGD", 0.5).optInit(0.1, 3);
  }

  @Test
  void rowsAreSpreadByIdOverThePs_andAPushMovesOnlyTheRowsItNames() {
    EmbeddingTable table = client.embeddingTable(spec("item").build());
    long[] ids = LongStream.range(0, 1000).map(i -> i * 7919).toArray();
    long onFirst = LongStream.of(ids).filter(id -> EmbeddingTable.shardOf(id, 2) == 0).count();
    assertTrue(onFirst > 400 && onFirst < 600, "ids on ps 0: " + onFirst);
    float[] before = table.pull(ids, 1);
    for (float v : before) {
      assertTrue(Math.abs(v) <= 0.1f, "initial values in +-0.1: " + v);
    }
    assertArrayEquals(before, table.pull(ids, 2), "held rows come back unchanged");
    long[] some = {ids[3], ids[500], ids[999]};
    float[] gradients = new float[12];
    for (int i = 0; i < gradients.length; i++) {
      gradients[i] = i + 1;
    }
    table.push(some, gradients, 3);
    float[] after = table.pull(ids, 4);
    for (int i = 0; i < ids.length; i++) {
      int pushed = i == 3 ? 0 : i == 500 ? 1 : i == 999 ? 2 : -1;
      for (int k = 0; k < 4; k++) {
        float expected = pushed < 0 ? before[i * 4 + k] : before[i * 4 + k] - 0.5f * gradients[pushed * 4 + k];
        assertEquals(expected, after[i * 4 + k], 1e-6f, "id " + ids[i] + " element " + k);
      }
    }
    // Another client, as another worker: the same table, the same rows.
    PsClient other = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
        .optSameJvmTransfers(false));
    assertArrayEquals(after, other.embeddingTable(spec("item").build()).pull(ids, 5));
  }

  @Test
  void anIdNeverTrained_readsTheDefaultRow_atInference() {
    EmbeddingTable table = client.embeddingTable(spec("user").build());
    float[] trained = table.pull(new long[] {11L}, 1);
    float[] read = table.read(new long[] {11L, 12L});
    assertArrayEquals(trained, java.util.Arrays.copyOf(read, 4), "a held id reads its row");
    assertArrayEquals(new float[4], java.util.Arrays.copyOfRange(read, 4, 8), "one never trained: the default row");
  }

  @Test
  void aFullPs_failsNamingTheTable_theNewIdDoesNotGetARow() {
    EmbeddingTable table = client.embeddingTable(spec("query").optMaxRowsPerShard(10).build());
    long[] ids = LongStream.range(0, 100).toArray();
    EmbeddingTableFullException e = assertThrows(EmbeddingTableFullException.class, () -> table.pull(ids, 1));
    assertTrue(e.getMessage().contains("embedding table 'query' is full on ps ") && e.getMessage().contains(
        "it holds its limit of 10 rows and a new id arrived (no eviction is set); raise its maxRows"), e.getMessage());
  }

  @Test
  void aTableIsCreatedOnce_anotherSpecUnderItsNameIsRefused_andBadSpecsNameTheirField() {
    client.embeddingTable(spec("ad").build());
    client.embeddingTable(spec("ad").build()); // a second worker: no-op
    IllegalArgumentException conflict = assertThrows(IllegalArgumentException.class,
        () -> client.embeddingTable(spec("ad").setDim(8).build()));
    assertTrue(conflict.getMessage().contains("embedding table 'ad' exists on ps ")
        && conflict.getMessage().contains("with another spec"), conflict.getMessage());
    IllegalArgumentException optimizer = assertThrows(IllegalArgumentException.class,
        () -> spec("ad").optOptimizer("ADAMW", 0.1).build());
    assertEquals("embedding table 'ad': optimizer must be one of [SGD, ADAGRAD, ROWWISE_ADAGRAD, LAZY_ADAM, FTRL], "
        + "got 'ADAMW'", optimizer.getMessage());
    EmbeddingTable ad = client.embeddingTable(spec("ad").build());
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> ad.push(new long[] {1L}, new float[3], 1));
    assertEquals("embedding table 'ad': 1 ids of dim 4 need 4 gradient values, got 3", unknown.getMessage());
  }
}
