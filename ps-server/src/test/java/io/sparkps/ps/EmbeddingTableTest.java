package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.EmbeddingTableFullException;
import io.sparkps.ps.spec.Optimizer;
import io.sparkps.ps.spec.PsException;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Embedding tables over real sockets: rows by id on two ps, created as ids arrive, bounded per ps.
 * The rows cross the ps's bulk ports here; the subclasses run every case with them in gRPC calls
 * and through memory (a client in the ps's JVM).
 */
class EmbeddingTableTest {
  private TestCluster cluster;
  private PsClient client;

  /** How the rows travel: {@code tcp} (the bulk port), {@code grpc} or {@code same-jvm}. */
  String transport() {
    return "tcp";
  }

  @BeforeEach
  void start() {
    cluster = TestCluster.netty(2, transport());
    client = cluster.client(cluster.builder());
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
    PsClient other = cluster.client(cluster.builder());
    assertArrayEquals(after, other.embeddingTable(spec("item").build()).pull(ids, 5));
  }

  @Test
  void aStepsBytesFollowItsIds_notTheTablesSize() {
    EmbeddingTable small = client.embeddingTable(spec("small").setDim(16).build());
    EmbeddingTable large = client.embeddingTable(spec("large").setDim(16).build());
    large.pull(LongStream.range(0, 100_000).toArray(), 0); // 100,000 rows held, against 100
    small.pull(LongStream.range(0, 100).toArray(), 0);
    long[] batch = LongStream.range(0, 100).map(i -> i * 31).toArray();
    long before = client.tableBytes();
    small.pull(batch, 1);
    small.push(batch, new float[batch.length * 16], 1);
    long onSmall = client.tableBytes() - before;
    before = client.tableBytes();
    large.pull(batch, 1);
    large.push(batch, new float[batch.length * 16], 1);
    long onLarge = client.tableBytes() - before;
    // 100 ids out, 100 rows of 16 floats back, 100 ids and 100 row gradients out: 14,400 bytes of payload
    long payload = 100 * 8 + 100 * 64 + 100 * 8 + 100 * 64;
    assertTrue(onSmall >= payload && onSmall < payload + 400, onSmall + " bytes for " + payload + " of payload");
    assertEquals(onSmall, onLarge, 64.0, "the same ids, a table 1,000 times larger: the same bytes");
  }

  /**
   * PsClient.save writes each ps's tables beside its variables, the second save only the rows
   * changed since the first; restore brings them back, and so does a new pair of ps (replacements).
   */
  @Test
  void tablesAreSavedWithThePs_incrementally_andRestored_alsoIntoNewPs(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path dir) throws Exception {
    EmbeddingTable table = client.embeddingTable(spec("item").optOptimizer("ADAGRAD", 0.5).build());
    long[] ids = LongStream.range(0, 500).toArray();
    table.pull(ids, 1);
    table.push(ids, new float[ids.length * 4], 1);
    client.save(dir.resolve("c1").toUri().toString());
    long[] some = {3L, 250L, 499L};
    table.push(some, new float[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2);
    String c2 = dir.resolve("c2").toUri().toString();
    client.save(c2);
    float[] saved = table.read(ids);
    long deltaBytes = java.nio.file.Files.size(dir.resolve("c2").resolve("ps-00000.snapshot"))
        + java.nio.file.Files.size(dir.resolve("c2").resolve("ps-00001.snapshot"));
    long fullBytes = java.nio.file.Files.size(dir.resolve("c1").resolve("ps-00000.snapshot"))
        + java.nio.file.Files.size(dir.resolve("c1").resolve("ps-00001.snapshot"));
    assertTrue(deltaBytes * 20 < fullBytes, "the second save holds 3 rows: " + deltaBytes + " vs " + fullBytes + " bytes");
    table.push(new long[] {7L}, new float[] {1, 1, 1, 1}, 4);
    client.restore(c2);
    assertArrayEquals(saved, table.read(ids), "restored in place");
    try (TestCluster replacements = TestCluster.netty(2, transport())) {
      PsClient fresh = replacements.client(replacements.builder());
      fresh.restore(c2);
      EmbeddingTable again = fresh.embeddingTable(spec("item").optOptimizer("ADAGRAD", 0.5).build());
      assertArrayEquals(saved, again.read(ids), "restored into new ps from the full save and the delta");
      // The optimizer's state came back too: the same step moves both tables alike.
      again.push(new long[] {7L}, new float[] {1, 1, 1, 1}, 5);
      table.push(new long[] {7L}, new float[] {1, 1, 1, 1}, 5);
      assertArrayEquals(table.read(ids), again.read(ids));
    }
  }

  private EmbeddingTable worker(int index, String group, java.time.Duration waitTimeout) {
    PsClient c = cluster.client(cluster.builder()
        .optWorker(index).optWaitTimeout(waitTimeout));
    return c.embeddingTable(spec("sync-item").optGroup(group).build());
  }

  /**
   * SYNC: each step's row gradients are summed over the workers and applied once as their mean; a
   * pull of the next step waits for the slow worker (held, then released), a retried push is taken
   * once, and a push ahead of the table is refused naming both steps.
   */
  @Test
  void aSyncTable_appliesEachStepOnceAsTheWorkersMean_andAPullWaitsForTheSlowWorker() throws Exception {
    client.createGroup(ConsistencyGroup.sync("g", 2));
    EmbeddingTable w0 = worker(0, "g", java.time.Duration.ofSeconds(30));
    EmbeddingTable w1 = worker(1, "g", java.time.Duration.ofSeconds(30));
    long[] ids = {1L, 2L, 3L};
    float[] before = w0.pull(ids, 0);
    assertArrayEquals(before, w1.pull(ids, 0));
    w0.push(new long[] {1L, 2L}, new float[] {1, 1, 1, 1, 2, 2, 2, 2}, 0);
    java.util.concurrent.CompletableFuture<float[]> next = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> w0.pull(ids, 1));
    Thread.sleep(500);
    assertTrue(!next.isDone(), "worker 0's pull of step 1 waits while worker 1 has not pushed step 0");
    assertArrayEquals(before, w1.read(ids), "nothing is applied before every worker pushed the step");
    w1.push(new long[] {2L, 3L}, new float[] {4, 4, 4, 4, 8, 8, 8, 8}, 0);
    float[] after = next.get(10, java.util.concurrent.TimeUnit.SECONDS);
    float[] mean = {1 / 2f, (2 + 4) / 2f, 8 / 2f};
    for (int i = 0; i < 3; i++) {
      for (int k = 0; k < 4; k++) {
        assertEquals(before[i * 4 + k] - 0.5f * mean[i], after[i * 4 + k], 1e-6f, "id " + ids[i] + " element " + k);
      }
    }
    w1.push(new long[] {2L, 3L}, new float[] {4, 4, 4, 4, 8, 8, 8, 8}, 0); // a retry
    assertArrayEquals(after, w1.pull(ids, 1), "a push repeated is taken once");
    IllegalStateException ahead = assertThrows(IllegalStateException.class,
        () -> w0.push(new long[] {1L}, new float[4], 5));
    assertTrue(ahead.getMessage().contains("pushed gradients for SYNC step 5 but the table is at step 1"),
        ahead.getMessage());
    // A push sent twice before the step completes (a retry after a lost reply) counts once too.
    w0.push(new long[] {1L}, new float[] {2, 2, 2, 2}, 1);
    w0.push(new long[] {1L}, new float[] {2, 2, 2, 2}, 1);
    w1.push(new long[0], new float[0], 1);
    assertEquals(after[0] - 0.5f * 2 / 2, w1.pull(ids, 2)[0], 1e-6f);
  }

  /**
   * A SYNC pull held on its ps (the ps counts it waiting for worker 1) ends at once, not at its
   * 30 s wait, when its client drops the ps as lost (a hung ps answers nothing), and when the ps
   * stops. In the ps's own JVM a lost ps is a stopped one, so only the stop is tried there.
   */
  @Test
  void aWaitingSyncPull_endsAtOnce_whenItsPsIsDroppedOrStops() throws Exception {
    client.createGroup(ConsistencyGroup.sync("g", 2));
    long[] ids = LongStream.range(0, 200).filter(id -> EmbeddingTable.shardOf(id, 2) == 0).limit(3).toArray();
    ParameterServer ps0 = cluster.servers.get(0);
    if (!transport().equals("same-jvm")) {
      PsClient c0 = cluster.client(cluster.builder().optWorker(0).optWaitTimeout(java.time.Duration.ofSeconds(30)));
      EmbeddingTable w0 = c0.embeddingTable(spec("sync-item").optGroup("g").build());
      w0.push(ids, new float[4 * ids.length], 0);
      long dropped = heldThenReleased(() -> w0.pull(ids, 1), () -> c0.dropShard(0, ps0.address()));
      assertTrue(dropped < 5_000, "the pull ended " + dropped + " ms after its ps was dropped");
    }
    PsClient c1 = cluster.client(cluster.builder().optWorker(0).optWaitTimeout(java.time.Duration.ofSeconds(30)));
    EmbeddingTable w0 = c1.embeddingTable(spec("sync-item").optGroup("g").build());
    w0.push(ids, new float[4 * ids.length], 0);
    long stopped = heldThenReleased(() -> w0.pull(ids, 1), ps0::close);
    assertTrue(stopped < 8_000, "the pull ended " + stopped + " ms after its ps stopped (which waits 2 s for calls)");
    // ... and so did the ps's side of it: no bulk thread of ps 0 is left waiting for worker 1.
    long until = System.nanoTime() + 5_000_000_000L;
    while (bulkThreads("sparkps-ps-0-bulk") > 0 && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertEquals(0, bulkThreads("sparkps-ps-0-bulk"), "ps 0's bulk threads after it stopped");
  }

  private static long bulkThreads(String prefix) {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.isAlive() && t.getName().startsWith(prefix)).count();
  }

  /**
   * Starts {@code pull}, waits until ps 0 holds it waiting (and it has not returned), runs
   * {@code release}, and returns the milliseconds until the pull failed with a {@link PsException}.
   * (A pull its client dropped the ps under still waits on the ps until its own wait ends: it is
   * counted before this pull starts.)
   */
  private long heldThenReleased(java.util.function.Supplier<float[]> pull, Runnable release) throws Exception {
    ParameterServer ps0 = cluster.servers.get(0);
    int before = ps0.pendingWaits();
    java.util.concurrent.CompletableFuture<float[]> held = java.util.concurrent.CompletableFuture.supplyAsync(pull);
    long until = System.nanoTime() + 10_000_000_000L;
    while (ps0.pendingWaits() == before && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(before + 1, ps0.pendingWaits(), "ps 0 holds the pull, waiting for worker 1 (" + before
        + " waits there before it)");
    assertTrue(!held.isDone(), "the pull waits");
    long released = System.nanoTime();
    release.run();
    java.util.concurrent.ExecutionException e = assertThrows(java.util.concurrent.ExecutionException.class,
        () -> held.get(20, java.util.concurrent.TimeUnit.SECONDS));
    long ms = (System.nanoTime() - released) / 1_000_000;
    assertTrue(e.getCause() instanceof PsException, "a PsException: " + e.getCause());
    return ms;
  }

  @Test
  void aSyncPull_waitsAtMostTheWaitTimeout_namingTheWorkersItWaitsFor() {
    client.createGroup(ConsistencyGroup.sync("g", 2));
    EmbeddingTable w0 = worker(0, "g", java.time.Duration.ofMillis(400));
    w0.push(new long[] {1L}, new float[4], 0);
    long started = System.nanoTime();
    PsException e = assertThrows(PsException.class, () -> w0.pull(new long[] {1L}, 1));
    long ms = (System.nanoTime() - started) / 1_000_000;
    assertTrue(e.getMessage().contains("waits for workers [1] to push step 0"), e.getMessage());
    assertTrue(ms >= 350 && ms < 10_000, "waited " + ms + " ms");
  }

  /** SSP(1): pushes apply at once; a pull two steps ahead of the slowest worker waits for it. */
  @Test
  void anSspTable_appliesAtOnce_andHoldsTheFastWorkerWithinTheStaleness() throws Exception {
    client.createGroup(ConsistencyGroup.ssp("s", 2, 1));
    EmbeddingTable w0 = worker(0, "s", java.time.Duration.ofSeconds(30));
    EmbeddingTable w1 = worker(1, "s", java.time.Duration.ofSeconds(30));
    float[] before = w0.pull(new long[] {9L}, 0);
    w0.push(new long[] {9L}, new float[] {2, 2, 2, 2}, 0);
    float[] one = w0.pull(new long[] {9L}, 1);
    assertEquals(before[0] - 0.5f * 2, one[0], 1e-6f, "applied at once, not averaged");
    w0.push(new long[] {9L}, new float[4], 1);
    java.util.concurrent.CompletableFuture<float[]> ahead = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> w0.pull(new long[] {9L}, 2));
    Thread.sleep(500);
    assertTrue(!ahead.isDone(), "step 2 is two ahead of worker 1 (at step 0): it waits");
    w1.push(new long[] {9L}, new float[4], 0);
    assertArrayEquals(one, ahead.get(10, java.util.concurrent.TimeUnit.SECONDS));
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
    // An optimizer is named in any case; the spec, the estimator's columns and the server know it by one enum,
    // the one dense variables' optimizers are named by too.
    assertEquals(Optimizer.LAZY_ADAM, spec("ad").optOptimizer(" lazy_Adam", 0.1).build().optimizer());
    assertEquals(Optimizer.FTRL, Optimizer.ofTable("ftrl"));
    IllegalArgumentException dense = assertThrows(IllegalArgumentException.class,
        () -> spec("ad").optOptimizer("adam", 0.1).build());
    assertEquals("embedding table 'ad': optimizer ADAM is one of dense variables; a table's must be one of [SGD, "
        + "ADAGRAD, ROWWISE_ADAGRAD, LAZY_ADAM, FTRL] (LAZY_ADAM is Adam on the rows a step touches)", dense.getMessage());
    assertThrows(IllegalArgumentException.class, () -> spec("ad").optOptimizer(Optimizer.MOMENTUM, 0.1).build());
    assertEquals(Optimizer.ADAM, io.sparkps.ps.spec.OptimizerConfig.adam(0.1).kind());
    assertEquals(EmbeddingSpec.DEFAULT_OPTIMIZER, EmbeddingSpec.builder().setName("d").setDim(1).build().optimizer());
    EmbeddingTable ad = client.embeddingTable(spec("ad").build());
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> ad.push(new long[] {1L}, new float[3], 1));
    assertEquals("embedding table 'ad': 1 ids of dim 4 need 4 gradient values, got 3", unknown.getMessage());
  }

  private long overBulk(String method) {
    return cluster.servers.stream().mapToLong(ps -> ps.rowCallsOverBulk().getOrDefault(method, 0L)).sum();
  }

  private long served(String method) {
    return cluster.servers.stream().mapToLong(ps -> ps.callsServed().getOrDefault(method, 0L)).sum();
  }

  /**
   * A set of tables: a step's pull of five tables is one call per ps (five alone are five), each
   * table's rows as its own handle reads them, and one push per ps moves each table's rows by its
   * own gradients.
   */
  @Test
  void aSetOfTables_pullsAndPushesEveryTable_inOneCallPerPs() {
    java.util.List<EmbeddingSpec> specs = new java.util.ArrayList<>();
    for (int t = 0; t < 5; t++) {
      specs.add(spec("field" + t).setDim(2 + t).build());
    }
    EmbeddingTableSet set = client.embeddingTables(specs);
    long[][] ids = new long[5][];
    for (int t = 0; t < 5; t++) {
      ids[t] = LongStream.range(0, 40 + 10L * t).map(i -> i * 104_729 + 7).toArray();
    }
    long pulls = served("PullEmbeddings");
    long overBulk = overBulk("PullEmbeddings");
    float[][] rows = set.pull(ids, 1);
    assertEquals(2, served("PullEmbeddings") - pulls, "one call per ps for five tables");
    assertEquals(transport().equals("grpc") ? 0 : 2, overBulk("PullEmbeddings") - overBulk,
        "the calls that came over the bulk data plane, rows over " + transport());
    EmbeddingTable[] alone = new EmbeddingTable[5];
    pulls = served("PullEmbeddings");
    for (int t = 0; t < 5; t++) {
      alone[t] = client.embeddingTable(specs.get(t));
      assertArrayEquals(alone[t].read(ids[t]), rows[t], "table " + t + "'s rows, as its own handle reads them");
      assertEquals(ids[t].length * (2 + t), rows[t].length);
    }
    assertEquals(10, served("PullEmbeddings") - pulls, "five tables alone: five calls per ps");
    float[][] gradients = new float[5][];
    for (int t = 0; t < 5; t++) {
      gradients[t] = new float[rows[t].length];
      for (int i = 0; i < gradients[t].length; i++) {
        gradients[t][i] = (t + 1) * ((i % 7) - 3);
      }
    }
    long pushes = served("PushEmbeddings");
    long pushesOverBulk = overBulk("PushEmbeddings");
    set.push(ids, gradients, 1);
    assertEquals(2, served("PushEmbeddings") - pushes, "one push per ps for five tables");
    assertEquals(transport().equals("grpc") ? 0 : 2, overBulk("PushEmbeddings") - pushesOverBulk,
        "the pushes that came over the bulk data plane, rows over " + transport());
    for (int t = 0; t < 5; t++) {
      float[] now = alone[t].read(ids[t]);
      for (int i = 0; i < now.length; i++) {
        assertEquals(rows[t][i] - 0.5f * gradients[t][i], now[i], 1e-5f, "table " + t + " value " + i);
      }
    }
    IllegalArgumentException count = assertThrows(IllegalArgumentException.class, () -> set.pull(new long[2][], 2));
    assertEquals("embedding tables 'field0', 'field1', 'field2', 'field3', 'field4': 2 id arrays for 5 tables (one "
        + "per table, in the order of specs())", count.getMessage());
    gradients[3] = new float[1];
    IllegalArgumentException shape = assertThrows(IllegalArgumentException.class, () -> set.push(ids, gradients, 2));
    assertEquals("embedding table 'field3': 70 ids of dim 5 need 350 gradient values, got 1", shape.getMessage());
    IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
        () -> client.embeddingTables(java.util.List.of(specs.get(0), specs.get(0))));
    assertEquals("embedding table 'field0' is named twice: each table once", twice.getMessage());
  }

  /**
   * SYNC tables in a set: the next step's pull of both waits for the slow worker's push (held, then
   * released), then reads each table's mean gradient applied once.
   */
  @Test
  void aSetOfSyncTables_waitsForTheSlowWorker_thenReadsEachTablesMean() throws Exception {
    client.createGroup(ConsistencyGroup.sync("g", 2));
    java.util.List<EmbeddingSpec> specs = java.util.List.of(spec("a").optGroup("g").build(),
        spec("b").setDim(3).optGroup("g").build());
    EmbeddingTableSet[] workers = new EmbeddingTableSet[2];
    for (int w = 0; w < 2; w++) {
      workers[w] = cluster.client(cluster.builder()
          .optWorker(w).optWaitTimeout(java.time.Duration.ofSeconds(30)))
          .embeddingTables(specs);
    }
    long[][] ids = {{1L, 2L, 3L}, {5L}};
    float[][] before = workers[0].pull(ids, 0);
    workers[1].pull(ids, 0);
    workers[0].push(ids, new float[][] {new float[12], {3, 3, 3}}, 0);
    java.util.concurrent.CompletableFuture<float[][]> next = java.util.concurrent.CompletableFuture.supplyAsync(
        () -> workers[0].pull(ids, 1));
    Thread.sleep(500);
    assertTrue(!next.isDone(), "worker 0's pull of step 1 waits while worker 1 has not pushed step 0");
    workers[1].push(new long[][] {{}, {5L}}, new float[][] {{}, {1, 1, 1}}, 0);
    float[][] after = next.get(10, java.util.concurrent.TimeUnit.SECONDS);
    assertArrayEquals(before[0], after[0], "table a: zero gradients");
    for (int k = 0; k < 3; k++) {
      assertEquals(before[1][k] - 0.5f * (3 + 1) / 2, after[1][k], 1e-6f, "table b: the mean applied once");
    }
  }

  /** A push call names a table the ps lacks: refused before any table of it is applied. */
  @Test
  void aPushCall_isCheckedWhole_beforeAnyTableOfItIsApplied() throws Exception {
    EmbeddingTable a = client.embeddingTable(spec("a").build());
    long[] ids = LongStream.range(0, 50).toArray();
    float[] held = a.pull(ids, 1);
    float[] ones = new float[200];
    java.util.Arrays.fill(ones, 1f);
    io.sparkps.ps.grpc.proto.EmbeddingPushBatch batch = io.sparkps.ps.grpc.proto.EmbeddingPushBatch.newBuilder()
        .addTables(io.sparkps.ps.grpc.proto.EmbeddingPushRequest.newBuilder().setTable("a").setStep(1)
            .setIds(io.sparkps.ps.wire.PackedArrays.ofLongs(ids))
            .setGradients(io.sparkps.ps.wire.PackedArrays.ofFloats(ones)))
        .addTables(io.sparkps.ps.grpc.proto.EmbeddingPushRequest.newBuilder().setTable("nope").setStep(1)
            .setIds(io.sparkps.ps.wire.PackedArrays.ofLongs(new long[] {1L}))
            .setGradients(io.sparkps.ps.wire.PackedArrays.ofFloats(new float[4])))
        .build();
    io.grpc.ManagedChannel channel = io.sparkps.ps.grpc.Connections.secured(io.grpc.netty.shaded.io.grpc.netty
        .NettyChannelBuilder.forAddress("127.0.0.1", cluster.servers.get(0).port()), cluster.tls()).build();
    try {
      io.grpc.Status status = io.sparkps.ps.testing.RawCalls.call(io.grpc.ClientInterceptors.intercept(channel,
          io.sparkps.ps.grpc.Auth.client(cluster.token)), "sparkps.ps.v1.ParameterService/PushEmbeddings",
          io.grpc.MethodDescriptor.MethodType.UNARY, batch.toByteArray());
      assertEquals(io.grpc.Status.Code.NOT_FOUND, status.getCode(), status.toString());
      assertTrue(status.getDescription().contains("embedding table 'nope' does not exist on ps 0"), status.toString());
    } finally {
      channel.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
    }
    assertArrayEquals(held, a.read(ids), "table 'a' is as it was: the call was refused whole");
  }
}
