package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.client.RunChannels;
import io.sparkps.ps.spec.Initializer;
import io.sparkps.ps.spec.VariableSpec;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Strangers flood a TLS ps with 3,000 idle TCP connections that never send a byte, first on its
 * gRPC port, then on its bulk port: its threads stay bounded, nothing runs out of memory, and the
 * run's own client pushes and pulls 16 MiB while the flood holds.
 */
class FloodTest {
  private static final int STRANGERS = 3000;

  private static int threads() {
    return ManagementFactory.getThreadMXBean().getThreadCount();
  }

  @ParameterizedTest(name = "{0} port")
  @ValueSource(strings = {"grpc", "bulk"})
  void threeThousandIdleConnections_holdNoThreads_andA16MiBPushStillCompletes(String port) throws Exception {
    try (TestCluster cluster = TestCluster.tls(1); PsClient client = cluster.client(0)) {
      ParameterServer ps = cluster.servers.get(0);
      client.create(VariableSpec.builder().setName("w").setShape(4096, 1024).optInitializer(Initializer.constant(0))
          .build()); // 16 MiB
      client.initializeAll();
      int before = threads();
      int most = before;
      List<SocketChannel> strangers = new ArrayList<>();
      int target = port.equals("grpc") ? ps.port() : ps.bulkPort();
      try {
        for (int i = 0; i < STRANGERS; i++) {
          strangers.add(SocketChannel.open(new InetSocketAddress("127.0.0.1", target)));
          if (i % 250 == 0) {
            most = Math.max(most, threads());
          }
        }
        INDArray gradient = Nd4j.ones(DataType.FLOAT, 4096, 1024);
        long t0 = System.nanoTime();
        client.push(Map.of("w", gradient));
        INDArray w = client.pull("w");
        long millis = (System.nanoTime() - t0) / 1_000_000;
        most = Math.max(most, threads());
        assertEquals(-0.01f, w.minNumber().floatValue(), "the push arrived whole");
        assertEquals(-0.01f, w.maxNumber().floatValue(), "the push arrived whole");
        System.out.printf("flood on the %s port: %d connections, JVM threads %d before, %d at most; "
            + "16 MiB push and pull took %d ms during it%n", port, STRANGERS, before, most, millis);
        // Netty's event loops serve every gRPC connection; the bulk port gives a thread only to the
        // 32 connections awaiting their handshake.
        assertTrue(most - before <= io.sparkps.ps.bulk.BulkServer.MAX_PENDING + 8,
            "threads grew from " + before + " to " + most);
        // An idle stranger is cut off once the handshake deadline passes.
        SocketChannel first = strangers.get(0);
        first.configureBlocking(false);
        long deadline = System.nanoTime() + 3L * RunChannels.HANDSHAKE_SECONDS * 1_000_000_000L;
        int read = 0;
        while (read >= 0 && System.nanoTime() < deadline) {
          read = first.read(java.nio.ByteBuffer.allocate(4096));
          Thread.sleep(50);
        }
        assertEquals(-1, read, "the server closed an idle stranger's connection");
      } finally {
        for (SocketChannel s : strangers) {
          s.close();
        }
      }
    }
  }
}
