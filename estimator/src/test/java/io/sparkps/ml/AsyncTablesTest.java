package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.sparkps.ml.embedding.CategoricalRows;
import io.sparkps.ml.embedding.EmbeddingInputs;
import io.sparkps.ml.embedding.EmbeddingStep;
import io.sparkps.ml.embedding.TableLookup;
import io.sparkps.ml.param.EmbeddingColumn;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * ASYNC tables beside a SYNC dense part ({@link TrainingConfig#asyncTables()}): a worker's table
 * pull of the next step does not wait for the other worker's push, and its own push is applied at
 * once; with the run's SYNC tables the same pull waits for the held worker until it is released.
 * Two workers' lookups on real in-process shards, the second worker held by not calling it.
 */
class AsyncTablesTest {
  private final List<ParameterServer> servers = new ArrayList<>();
  private final List<PsClient> clients = new ArrayList<>();

  @BeforeEach
  void start() {
    PsToken token = PsToken.generate();
    for (int i = 0; i < 2; i++) {
      servers.add(ParameterServer.builder().setShardIndex(i).setToken(token).optInProcess("async-tables-" + i + "-"
          + System.nanoTime()).build().start());
    }
    for (int w = 0; w < 2; w++) {
      clients.add(PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList())
          .setToken(token).optWorker(w).optWaitTimeout(Duration.ofSeconds(30)).build());
    }
    clients.get(0).createGroup(TrainingConfig.builder().optNumWorkers(2).build().group(2));
  }

  @AfterEach
  void stop() {
    clients.forEach(PsClient::close);
    servers.forEach(ParameterServer::close);
  }

  @Test
  void asyncTables_aPullDoesNotWaitForTheHeldWorker_syncTablesWaitUntilItIsReleased() throws Exception {
    TrainingConfig sync = TrainingConfig.builder().optNumWorkers(2)
        .optEmbeddingColumns(java.util.List.of(EmbeddingColumn.of("C1", 4))).build();
    TrainingConfig hybrid = sync.toBuilder().optAsyncTables(true).build();
    assertEquals("dl4j", sync.tablesGroup(2), "the run's SYNC group");
    assertEquals("", hybrid.tablesGroup(2), "no group: ASYNC");

    // ASYNC tables: worker 1 is held (never called); worker 0's next pull returns at once, its push applied.
    Lookups async = new Lookups("a", hybrid);
    float[] before = async.pull(0, 0);
    async.pushOnes(0, 0);
    float[] next = CompletableFuture.supplyAsync(() -> async.pull(0, 1)).get(5, TimeUnit.SECONDS);
    for (int i = 0; i < before.length; i++) {
      assertEquals(before[i] - 1f, next[i], 1e-6f, "worker 0's own gradient, applied at once: value " + i);
    }

    // SYNC tables: the same pull waits for worker 1's push of step 0, then sees the workers' mean.
    Lookups synced = new Lookups("b", sync);
    float[] start = synced.pull(0, 0);
    assertArrayEquals(start, synced.pull(1, 0));
    synced.pushOnes(0, 0);
    CompletableFuture<float[]> held = CompletableFuture.supplyAsync(() -> synced.pull(0, 1));
    Thread.sleep(500);
    assertFalse(held.isDone(), "worker 0's pull of step 1 waits while worker 1 has not pushed step 0");
    synced.lookups.get(1).push(synced.lookups.get(1).pull(synced.rows, new int[] {0, 1}, 0, true), new float[4], 1,
        0);
    float[] after = held.get(10, TimeUnit.SECONDS);
    for (int i = 0; i < start.length; i++) {
      assertEquals(start[i] - 0.5f, after[i], 1e-6f, "the mean of 1 and 0 over the two workers: value " + i);
    }
  }

  /** Each worker's lookup of one column (dim 2, SGD at rate 1) and two rows with ids 1 and 2. */
  private final class Lookups {
    final EmbeddingInputs inputs;
    final CategoricalRows rows;
    final List<TableLookup> lookups = new ArrayList<>();

    Lookups(String column, TrainingConfig config) {
      inputs = new EmbeddingInputs(List.of(EmbeddingColumn.of(column, 2).withOptimizer("SGD", 1).withInitScale(0.5)),
          List.of());
      rows = EmbeddingStep.read(List.of(RowFactory.create(1.0, 1L), RowFactory.create(0.0, 2L)).iterator(), inputs,
          true, 1, 0);
      for (PsClient c : clients) {
        lookups.add(new TableLookup(inputs, c, config.tablesGroup(2)));
      }
    }

    float[] pull(int worker, long step) {
      TableLookup l = lookups.get(worker);
      return l.features(l.pull(rows, new int[] {0, 1}, step, true));
    }

    /** Worker {@code worker}'s push of step {@code step}: a gradient of 1 for every value of both rows. */
    void pushOnes(int worker, long step) {
      TableLookup l = lookups.get(worker);
      l.push(l.pull(rows, new int[] {0, 1}, step, true), new float[] {1, 1, 1, 1}, 1, step);
    }
  }
}
