package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableSpec;
import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

class SnapshotTest {
  @TempDir
  Path dir;

  @Test
  void saveThenRestore_bringsBackValuesOptimizerStateAndVersion() {
    try (TestCluster cluster = TestCluster.inProcess(2)) {
      PsClient c = cluster.client(PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
          .optSplitBytes(64));
      c.create(VariableSpec.builder().setName("w").setShape(8, 4).optOptimizer(OptimizerConfig.adam(0.1))
          .optInitializer(Initializer.normal(0, 1, 3)).build());
      c.initializeAll();
      INDArray g1 = Nd4j.rand(DataType.FLOAT, 8, 4);
      INDArray g2 = Nd4j.rand(DataType.FLOAT, 8, 4);
      for (int i = 0; i < 3; i++) {
        c.push(Map.of("w", g1));
      }
      INDArray saved = c.pull("w");
      String uri = dir.toUri().toString() + "snap";
      c.save(uri);
      c.push(Map.of("w", g2));
      c.push(Map.of("w", g2));
      INDArray continued = c.pull("w");

      c.restore(uri);
      VariableValue restored = c.read("w");
      assertEquals(saved, restored.value());
      assertEquals(3, restored.version());
      c.push(Map.of("w", g2));
      c.push(Map.of("w", g2));
      assertEquals(continued, c.pull("w"), "Adam's moments were restored too");

      String[] files = new File(dir.toFile(), "snap").list();
      Arrays.sort(files);
      assertEquals("[ps-00000.snapshot, ps-00001.snapshot]",
          Arrays.toString(Arrays.stream(files).filter(f -> !f.endsWith(".crc")).toArray()),
          "no temporary files are left");
    }
  }

  @Test
  void restore_missingSnapshot_failsNamingThePath() {
    try (TestCluster cluster = TestCluster.inProcess(1)) {
      PsClient c = cluster.client(0);
      String uri = dir.toUri() + "nothing-here";
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.restore(uri));
      assertTrue(e.getMessage().contains("nothing-here"), e.getMessage());
    }
  }
}
