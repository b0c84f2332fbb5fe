package io.sparkps.ml.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ml.training.Dl4jTrainer;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.ShardRecovery;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableInfo;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * What the chief of a new stage attempt does with servers of which one was replaced and not
 * refilled (two in-process shards, shard 1 replaced): it never fills the replacement from fresh
 * values beside trained ones, but waits for a refill, else rolls every shard back to the latest
 * checkpoint, else fails naming the shard and the fix.
 */
class ServerStateTest {
  @TempDir
  Path dir;
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new ArrayList<>();
  private final List<String> refills = new CopyOnWriteArrayList<>();
  private NetworkVariables variables;

  private static final String NETWORK = new NeuralNetConfiguration.Builder().seed(1).dataType(DataType.FLOAT)
      .updater(new Adam(0.01)).list()
      .layer(new DenseLayer.Builder().nIn(300).nOut(300).activation(Activation.TANH).build())
      .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(300).nOut(2).activation(Activation.SOFTMAX)
          .build()).build().toJson();

  @BeforeEach
  void start() {
    variables = NetworkVariables.of(Net.fromJson(NETWORK), "dl4j");
    String run = "state-test-" + UUID.randomUUID();
    for (int s = 0; s < 2; s++) {
      servers.add(ParameterServer.builder().setShardIndex(s).setToken(token).optInProcess(run + "-" + s).build().start());
    }
  }

  @AfterEach
  void stop() {
    servers.forEach(ParameterServer::close);
  }

  /** A client of the shards as they serve now, with the variables declared (as a worker's start does). */
  private PsClient client() {
    return client(null);
  }

  /**
   * As above, whose requests for kept copies (a chief's of a retried stage) {@code keepers} answers
   * (null: a first attempt, nobody to ask).
   */
  private PsClient client(java.util.function.Consumer<java.util.Collection<Integer>> keepers) {
    PsClient ps = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList()).setToken(token)
        .optSplitBytes(64 << 10).optRecovery(new ShardRecovery() {
          @Override
          public String awaitReplacement(int shard, String lostAddress) {
            return null;
          }

          @Override
          public void restored(int shard, long step, String source) {
            refills.add(shard + "@" + step + ": " + source);
          }

          @Override
          public boolean requestRefill(java.util.Collection<Integer> shards) {
            if (keepers == null) {
              return false;
            }
            keepers.accept(shards);
            return true;
          }
        }).build();
    ps.createGroup(ConsistencyGroup.async("dl4j"));
    ps.create(variables.specs());
    return ps;
  }

  private void fill(PsClient ps, float value) {
    for (var spec : variables.specs()) {
      ps.assign(spec.name(), Nd4j.valueArrayOf(spec.shape(), value));
    }
  }

  /** Replaces shard 1 by an empty server (its task was lost, and nobody refilled it). */
  private void replaceShard1() {
    replace(1);
  }

  private void replace(int shard) {
    servers.get(shard).close();
    servers.set(shard, ParameterServer.builder().setShardIndex(shard).setToken(token)
        .optInProcess("state-test-replacement-" + UUID.randomUUID()).build().start());
  }

  /** A worker's copy of what the servers hold now (its last pull), as it leaves it when its task ends. */
  private io.sparkps.ps.client.LastCopy workerCopy() {
    try (PsClient worker = client()) {
      worker.pullInto(variables.views(Net.fromJson(NETWORK).params().ulike()));
      return GrpcPsClient.of(worker).lastCopy();
    }
  }

  /**
   * Every shard lost at a retried stage (one ps, lost with the chief's executor): the chief asks
   * for the copies the previous attempt's workers kept; one refills every shard in the background
   * (as an executor's keeper does), and the run goes on from it, not from the initializers.
   */
  @Test
  void everyShardLostAtARetriedStage_theKeptCopyRefillsThem_notTheInitializers() throws Exception {
    io.sparkps.ps.client.LastCopy copy;
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 5);
      copy = workerCopy();
    }
    replace(0);
    replace(1);
    List<Thread> keepers = new CopyOnWriteArrayList<>();
    try (PsClient chief = client(shards -> {
      Thread keeper = new Thread(() -> {
        try (PsClient held = client()) {
          GrpcPsClient.of(held).refillLost(copy, " kept by executor 9");
        }
      });
      keepers.add(keeper);
      keeper.start();
    })) {
      String done = ServerState.prepare(chief, variables, checkpoints(), 1, Duration.ofSeconds(20));
      assertEquals("every ps had lost its state: refilled ps [0, 1] from the copies the workers of the previous "
          + "attempt kept", done);
      assertEquals(List.of(5f), values(chief, variables), "every shard from the copy, none from the initializers");
      for (Thread k : keepers) {
        k.join(10_000);
      }
      assertEquals(2, refills.size(), refills.toString());
      // (The worker never copied the optimizer state: this copy holds values only.)
      assertTrue(refills.stream().allMatch(r -> r.contains("worker 0's copy of step 0") && r.endsWith(
          "kept by executor 9; optimizer state started afresh")), refills.toString());
    }
  }

  /** Every shard lost at a retried stage and no copy kept: after the grace, the checkpoint, else the initializers. */
  @Test
  void everyShardLostAtARetriedStage_noCopyKept_theCheckpointAfterTheGrace() {
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 3);
      Checkpoints.save(first, checkpoints(), 100, variables, 3, 1);
      fill(first, 5);
    }
    replace(0);
    replace(1);
    List<java.util.Collection<Integer>> asked = new CopyOnWriteArrayList<>();
    try (PsClient chief = client(asked::add)) {
      long t0 = System.nanoTime();
      String done = ServerState.prepare(chief, variables, checkpoints(), 1, Duration.ofMillis(500));
      assertTrue(System.nanoTime() - t0 >= 500_000_000L, "waited the grace for a kept copy");
      assertEquals(List.of(List.of(0, 1)), asked.stream().map(List::copyOf).toList());
      assertTrue(done.startsWith("resumed from the checkpoint of step 100"), done);
      assertEquals(List.of(3f), values(chief, variables));
    }
  }

  /** The values held for every variable on every shard (each variable holds one value everywhere here). */
  private static List<Float> values(PsClient ps, NetworkVariables variables) {
    List<Float> out = new ArrayList<>();
    for (String name : variables.names()) {
      var v = ps.read(name).value();
      out.add(v.minNumber().floatValue());
      out.add(v.maxNumber().floatValue());
    }
    return out.stream().distinct().toList();
  }

  private String checkpoints() {
    return dir.toUri().toString();
  }

  @Test
  void replacedShardOfATrainedRun_noRefill_everyShardRollsBackToTheCheckpoint() {
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 3);
      Checkpoints.save(first, checkpoints(), 100, variables, 3, 1);
      fill(first, 5); // trained on past the checkpoint
    }
    replaceShard1();
    try (PsClient chief = client()) {
      String done = ServerState.prepare(chief, variables, checkpoints(), 1, Duration.ofMillis(300));
      assertTrue(done.contains("ps [1] lost its state") && done.contains("step 100"), done);
      assertEquals(List.of(3f), values(chief, variables), "every shard at the checkpoint, none half-trained");
      assertEquals(1, refills.size(), refills.toString());
      assertTrue(refills.get(0).startsWith("1@100: the checkpoint of step 100 in "), refills.get(0));
    }
  }

  @Test
  void replacedShardOfATrainedRun_noRefillNoCheckpoint_failsNamingTheShardAndTheFix_nothingFilled() {
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 5);
    }
    replaceShard1();
    try (PsClient chief = client()) {
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> ServerState.prepare(chief, variables, null, 1, Duration.ofMillis(300)));
      assertTrue(e.getMessage().contains("state of ps [1]") && e.getMessage().contains("set checkpointDir"),
          e.getMessage());
      List<VariableInfo> slices = chief.listVariables();
      assertTrue(slices.stream().filter(v -> v.shard() == 1).noneMatch(VariableInfo::initialized),
          "the replacement was not filled from fresh values: " + slices);
      assertTrue(slices.stream().filter(v -> v.shard() == 0).allMatch(v -> v.initialized() && v.version() > 0), slices
          .toString());
    }
  }

  @Test
  void replacedShardOfATrainedRun_refilledWithinTheGrace_keptWithoutRollback() throws Exception {
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 3);
      Checkpoints.save(first, checkpoints(), 100, variables, 3, 1);
      fill(first, 5);
    }
    replaceShard1();
    try (PsClient chief = client(); PsClient survivor = client()) {
      Thread refill = new Thread(() -> {
        try {
          Thread.sleep(500);
          survivor.initializeAll(); // stands for a surviving worker's refill of shard 1
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      refill.start();
      assertNull(ServerState.prepare(chief, variables, checkpoints(), 1, Duration.ofSeconds(20)));
      refill.join();
      for (VariableInfo v : chief.listVariables()) {
        assertTrue(v.initialized(), v.toString());
        assertTrue(v.shard() == 1 || v.version() > 1, "shard 0 kept its trained state, not the checkpoint's: " + v);
      }
      assertEquals(List.of(), refills, "no rollback");
    }
  }

  @Test
  void replacedShardBeforeAnyStep_isInitialized_theOthersKept() {
    try (PsClient first = client()) {
      first.initializeAll();
    }
    replaceShard1();
    try (PsClient chief = client()) {
      String done = ServerState.prepare(chief, variables, null, 1, Duration.ofMillis(300));
      assertEquals("initialized the variables of ps [1], replaced before any training step", done);
      assertTrue(chief.listVariables().stream().allMatch(VariableInfo::initialized));
    }
  }

  @Test
  void freshServers_initialized_andServersHoldingTheRunsState_kept() {
    try (PsClient chief = client()) {
      assertNull(ServerState.prepare(chief, variables, null, 1, Duration.ofMillis(300)));
      assertTrue(chief.listVariables().stream().allMatch(VariableInfo::initialized));
      fill(chief, 5);
      assertNull(ServerState.prepare(chief, variables, checkpoints(), 1, Duration.ofMillis(300)));
      assertEquals(List.of(5f), values(chief, variables));
    }
  }

  /**
   * The driver's read of the trained parameters when a ps was lost after the last step (no worker
   * is left to refill it): from the run's latest checkpoint; without checkpoints, a failure that
   * says so and what to set.
   */
  @Test
  void theFinalRead_withAPsLostAfterTheLastStep_readsTheLatestCheckpoint_orSaysWhatToSet() {
    try (PsClient first = client()) {
      first.initializeAll();
      fill(first, 3);
      Checkpoints.save(first, checkpoints(), 100, variables, 3, 1); // the chief's checkpoint at the end
    }
    List<String> addresses = servers.stream().map(ParameterServer::address).toList();
    servers.get(1).close();
    Net probe = Net.fromJson(NETWORK);
    TrainingConfig without = TrainingConfig.builder().optConsistency(io.sparkps.ps.spec.Consistency.ASYNC).optStaleness(0)
        .optBatchSize(16).optSeed(1).build();
    TrainingConfig withCheckpoints = without.toBuilder().optCheckpointDir(checkpoints()).build();
    try (PsClient reader = PsClient.builder().setShards(addresses).setToken(token)
        .optCallTimeout(Duration.ofSeconds(5)).build()) {
      float[] params = Dl4jTrainer.finalParameters(probe, "dl4j", withCheckpoints).apply(reader);
      assertEquals(probe.params().length(), params.length);
      for (float p : params) {
        assertEquals(3f, p, 0f);
      }
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> Dl4jTrainer.finalParameters(probe, "dl4j", without).apply(reader));
      assertTrue(e.getMessage().startsWith("the trained parameters could not be read from the ps shards (a ps was lost "
          + "after the last step: ") && e.getMessage().endsWith("set checkpointDir to survive this"), e.getMessage());
      // A directory without a checkpoint yet: the run's own, when the run ended before its first save was due.
      TrainingConfig empty = without.toBuilder().optCheckpointDir(dir.resolve("none-yet").toUri().toString()).build();
      e = assertThrows(IllegalStateException.class, () -> Dl4jTrainer.finalParameters(probe, "dl4j", empty).apply(reader));
      assertTrue(e.getMessage().contains("none-yet holds no checkpoint: without a checkpointDir of yours, the run's own "
          + "checkpoints come at least 30 s apart") && e.getMessage().endsWith("set checkpointDir to have the last step saved"),
          e.getMessage());
    }
  }
}
