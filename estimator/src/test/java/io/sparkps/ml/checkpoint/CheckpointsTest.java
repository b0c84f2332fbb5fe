package io.sparkps.ml.checkpoint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * Checkpoints on real files with two ps shards: one directory per checkpoint, a marker with each
 * shard file's digest written last, the newest K kept, and all-or-nothing restores that skip a
 * save that did not finish and fall back from a damaged checkpoint to the previous good one.
 */
class CheckpointsTest {
  @TempDir
  Path dir;
  private final PsToken token = PsToken.generate();
  private final List<ParameterServer> servers = new ArrayList<>();
  private NetworkVariables variables;

  @BeforeEach
  void start() {
    variables = NetworkVariables.of(Net.fromJson(new NeuralNetConfiguration.Builder().seed(1).dataType(DataType.FLOAT)
        .updater(new Adam(0.01)).list()
        .layer(new DenseLayer.Builder().nIn(300).nOut(300).activation(Activation.TANH).build())
        .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT).nIn(300).nOut(2).activation(Activation.SOFTMAX)
            .build()).build().toJson()), "dl4j");
  }

  @AfterEach
  void stop() {
    servers.forEach(ParameterServer::close);
  }

  /** A client of two fresh shards (a new run) with the network's variables declared. */
  private PsClient client(boolean initialize) {
    servers.forEach(ParameterServer::close);
    servers.clear();
    String run = "ckpt-test-" + UUID.randomUUID();
    for (int s = 0; s < 2; s++) {
      servers.add(ParameterServer.builder().setShardIndex(s).setToken(token).optInProcess(run + "-" + s).build().start());
    }
    PsClient ps = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList()).setToken(token)
        .optSplitBytes(64 << 10).build();
    ps.createGroup(io.sparkps.ps.spec.ConsistencyGroup.async("dl4j"));
    ps.create(variables.specs());
    if (initialize) {
      ps.initializeAll();
    }
    return ps;
  }

  /** Sets every variable to {@code value}: the state a checkpoint of that "step" holds. */
  private void fill(PsClient ps, float value) {
    for (var spec : variables.specs()) {
      ps.assign(spec.name(), Nd4j.valueArrayOf(spec.shape(), value));
    }
  }

  private float valueOf(PsClient ps, String name) {
    INDArray v = ps.read(name).value();
    float first = v.getFloat(0);
    assertEquals(first * v.length(), v.sumNumber().floatValue(), Math.abs(first) * v.length() * 1e-5 + 1e-3,
        name + " holds one value everywhere");
    return first;
  }

  private Path shardFile(long step, int shard) {
    return dir.resolve(String.format("ckpt-%010d", step)).resolve(String.format("ps-%05d.snapshot", shard));
  }

  private void saveSteps(long... steps) {
    try (PsClient ps = client(true)) {
      for (long step : steps) {
        fill(ps, step);
        Checkpoints.save(ps, dir.toUri().toString(), step, variables, 3, 1);
      }
    }
  }

  @Test
  void eachCheckpointInItsOwnDirectory_newestThreeKept_markerWithDigests() throws IOException {
    saveSteps(10, 20, 30, 40);
    try (Stream<Path> listing = Files.list(dir)) {
      assertEquals(List.of("ckpt-0000000020", "ckpt-0000000030", "ckpt-0000000040"),
          listing.map(p -> p.getFileName().toString()).sorted().toList());
    }
    Checkpoints.Marker newest = Checkpoints.latest(dir.toUri().toString()).orElseThrow();
    assertEquals(40, newest.step());
    assertEquals(2, newest.shards().size());
    for (var s : newest.shards()) {
      assertTrue(s.sha256().matches("[0-9a-f]{64}"), s.toString());
      assertEquals(Files.size(shardFile(40, s.shard())), s.bytes());
    }
  }

  @Test
  void checkpointsOfEmbeddingTables_keepTheSavesAKeptOneBuildsOn_untilAFullSaveFreesThem() throws IOException {
    String root = dir.toUri().toString();
    float[] latest;
    long[] ids = java.util.stream.LongStream.range(0, 50).toArray();
    try (PsClient ps = client(true)) {
      io.sparkps.ps.EmbeddingTable table = ps.embeddingTable(io.sparkps.ps.spec.EmbeddingSpec.builder().setName("items")
          .setDim(2).optOptimizer("SGD", 1).build());
      for (long step = 1; step <= io.sparkps.ps.server.Snapshots.FULL_EVERY + 2; step++) {
        table.pull(new long[] {step}, step);
        table.push(new long[] {step}, new float[] {1, 1}, step); // one row changes per checkpoint
        Checkpoints.Marker m = Checkpoints.save(ps, root, 10 * step, variables, 2, 1);
        int deltas = (int) ((step - 1) % io.sparkps.ps.server.Snapshots.FULL_EVERY);
        assertEquals(deltas, m.shards().get(0).tablesNeeds().size(), "step " + step + ": the saves it builds on");
        if (step == 4) {
          // Two kept (30, 40), and 10 and 20 besides: the chain of 40's tables goes back to 10's full save.
          assertEquals(List.of("ckpt-0000000010", "ckpt-0000000020", "ckpt-0000000030", "ckpt-0000000040"),
              checkpointDirs());
        }
      }
      latest = table.read(ids);
    }
    // Step 9's save is full again and step 10's builds on it: the chain before 9 is no longer needed.
    assertEquals(List.of("ckpt-0000000090", "ckpt-0000000100"), checkpointDirs());
    try (PsClient restored = client(false)) {
      Checkpoints.restore(restored, root, variables, 1).orElseThrow();
      io.sparkps.ps.EmbeddingTable table = restored.embeddingTable(io.sparkps.ps.spec.EmbeddingSpec.builder().setName("items")
          .setDim(2).optOptimizer("SGD", 1).build());
      org.junit.jupiter.api.Assertions.assertArrayEquals(latest, table.read(ids));
    }
  }

  private List<String> checkpointDirs() throws IOException {
    try (Stream<Path> listing = Files.list(dir)) {
      return listing.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("ckpt-")).sorted().toList();
    }
  }

  @Test
  void theMarkerRecordsTheMinibatchesPerStep_oneInMarkersWrittenBeforeItWas() throws IOException {
    try (PsClient ps = client(true)) {
      fill(ps, 10);
      assertEquals(4, Checkpoints.save(ps, dir.toUri().toString(), 10, variables, 3, 4).gradientAccumulation());
    }
    assertEquals(4, Checkpoints.latest(dir.toUri().toString()).orElseThrow().gradientAccumulation());
    Path marker = dir.resolve("ckpt-0000000010").resolve("checkpoint.properties");
    List<String> lines = Files.readAllLines(marker);
    Files.write(marker, lines.stream().filter(l -> !l.startsWith("gradientAccumulation=")).toList());
    Files.deleteIfExists(marker.resolveSibling(".checkpoint.properties.crc")); // Hadoop's checksum of the old text
    assertTrue(lines.size() == Files.readAllLines(marker).size() + 1, "one line fewer: " + lines);
    assertEquals(1, Checkpoints.latest(dir.toUri().toString()).orElseThrow().gradientAccumulation());
  }

  @Test
  void anUnfinishedSave_isNeverRead_andIsReplacedWhenThatStepIsSavedAgain() throws IOException {
    saveSteps(10, 20);
    // A save killed after its shard files, before its marker.
    Files.createDirectories(shardFile(30, 0).getParent());
    Files.copy(shardFile(20, 0), shardFile(30, 0));
    try (PsClient ps = client(false)) {
      Checkpoints.Restored r = Checkpoints.restore(ps, dir.toUri().toString(), variables, 1).orElseThrow();
      assertEquals(20, r.marker().step());
      assertEquals(List.of(), r.skipped());
      variables.names().forEach(n -> assertEquals(20f, valueOf(ps, n), n));
    }
    saveSteps(30);
    assertEquals(30, Checkpoints.latest(dir.toUri().toString()).orElseThrow().step());
  }

  @Test
  void aTruncatedOrAlteredShardFile_fallsBackToThePreviousCheckpoint_neverAMix() throws IOException {
    saveSteps(10, 20, 30);
    try (RandomAccessFile f = new RandomAccessFile(shardFile(30, 1).toFile(), "rw")) {
      f.setLength(f.length() / 2); // shard 1 of the newest: truncated
    }
    try (PsClient ps = client(false)) {
      Checkpoints.Restored r = Checkpoints.restore(ps, dir.toUri().toString(), variables, 1).orElseThrow();
      assertEquals(20, r.marker().step());
      assertTrue(r.skipped().toString().contains("step 30") && r.skipped().toString().contains("ps-00001.snapshot is damaged"),
          r.skipped().toString());
      // Shard 0's file of step 30 was sound, yet every variable on both shards is step 20's.
      variables.names().forEach(n -> assertEquals(20f, valueOf(ps, n), n));
    }
    alterOneByte(shardFile(20, 0));
    try (PsClient ps = client(false)) {
      Checkpoints.Restored r = Checkpoints.restore(ps, dir.toUri().toString(), variables, 1).orElseThrow();
      assertEquals(10, r.marker().step());
      assertTrue(r.skipped().get(1).contains("SHA-256"), r.skipped().toString());
      variables.names().forEach(n -> assertEquals(10f, valueOf(ps, n), n));
    }
  }

  @Test
  void everyCheckpointDamaged_isANamedError() throws IOException {
    saveSteps(10, 20);
    alterOneByte(shardFile(10, 0));
    Files.delete(shardFile(20, 1));
    try (PsClient ps = client(false)) {
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> Checkpoints.restore(ps, dir.toUri().toString(), variables, 1));
      assertTrue(e.getMessage().startsWith("no checkpoint in " + dir.toUri() + " can be restored, each is damaged: "
          + "[step 20: ") && e.getMessage().contains("step 10: ") && e.getMessage().contains("use a new checkpointDir"),
          e.getMessage());
      assertEquals(variables.names().stream().sorted().toList(), ps.reportUninitialized(), "nothing was restored");
    }
  }

  /**
   * Flips a bit in a float near the end of {@code file}: the file still parses, only its digest
   * tells. (Hadoop's local file system keeps a CRC beside each file that would catch it first; it
   * is removed, as on a file system without one.)
   */
  private static void alterOneByte(Path file) throws IOException {
    Files.deleteIfExists(file.resolveSibling("." + file.getFileName() + ".crc"));
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      long at = f.length() - 7;
      f.seek(at);
      int b = f.read();
      f.seek(at);
      f.write(b ^ 0x40);
    }
  }
}
