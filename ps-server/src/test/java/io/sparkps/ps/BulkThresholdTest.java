package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.spec.VariableSpec;
import org.junit.jupiter.api.Test;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Which way a dense transfer to a ps on a socket goes: over its bulk port at any size by default
 * (a 1 KiB variable too), as gRPC calls below {@code optBulkMinBytes}.
 */
class BulkThresholdTest {
  @Test
  void aSmallVariable_takesTheBulkPort_unlessTheClientSetsAThreshold() {
    try (TestCluster cluster = TestCluster.netty(1, false)) {
      PsClient bulk = cluster.client(cluster.builder());
      bulk.create(VariableSpec.of("w", 16, 16));
      bulk.initializeAll();
      INDArray v = Nd4j.rand(DataType.FLOAT, 16, 16);
      long updates = served(cluster, "Update");
      long pulls = served(cluster, "Pull");
      bulk.assign("w", v);
      assertEquals(v, bulk.pull("w"));
      assertEquals(0, served(cluster, "Update") - updates, "no gRPC update");
      assertEquals(0, served(cluster, "Pull") - pulls, "no gRPC pull");
      assertTrue(bulk.bulkWireBytes() >= 2 * 4 * 256, "the values crossed the bulk port: " + bulk.bulkWireBytes());

      PsClient grpc = cluster.client(cluster.builder().optBulkMinBytes(1 << 20));
      INDArray u = Nd4j.rand(DataType.FLOAT, 16, 16);
      grpc.assign("w", u);
      assertEquals(u, grpc.pull("w"));
      assertEquals(1, served(cluster, "Update") - updates, "one gRPC update");
      assertEquals(1, served(cluster, "Pull") - pulls, "one gRPC pull");
      assertEquals(0, grpc.bulkWireBytes(), "nothing crossed the bulk port");
      assertThrows(IllegalArgumentException.class, () -> PsClient.builder().optBulkMinBytes(-1));
    }
  }

  private static long served(TestCluster cluster, String method) {
    return cluster.servers.stream().mapToLong(ps -> ps.callsServed().getOrDefault(method, 0L)).sum();
  }
}
