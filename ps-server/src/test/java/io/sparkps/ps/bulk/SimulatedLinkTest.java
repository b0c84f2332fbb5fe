package io.sparkps.ps.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The benchmarks' simulated link: each way paced at its speed, shared by a shard's connections, off by default. */
class SimulatedLinkTest {
  private static final int MB = 1 << 20;
  private final java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newCachedThreadPool();

  @AfterEach
  void unset() {
    System.clearProperty(SimulatedLink.PROPERTY);
    threads.shutdownNow();
  }

  /** A connected loopback pair: [0] the client's end, [1] the server's. */
  private static SocketChannel[] pair(ServerSocketChannel server) throws Exception {
    SocketChannel client = SocketChannel.open(server.getLocalAddress());
    return new SocketChannel[] {client, server.accept()};
  }

  private CompletableFuture<Long> drain(SocketChannel ch, long bytes) {
    return CompletableFuture.supplyAsync(() -> {
      ByteBuffer b = ByteBuffer.allocateDirect(MB);
      long got = 0;
      try {
        while (got < bytes) {
          b.clear();
          int n = ch.read(b);
          if (n < 0) {
            break;
          }
          got += n;
        }
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      return got;
    }, threads);
  }

  private static void send(ByteChannel ch, int bytes) throws Exception {
    BulkWire.writeFully(ch, ByteBuffer.allocateDirect(bytes / 2), ByteBuffer.allocateDirect(bytes - bytes / 2));
  }

  @Test
  void unsetOrZero_leavesTheChannelAsItIs_andABadValueSaysWhatToGive() throws Exception {
    try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
      SocketChannel[] p = pair(server);
      assertSame(p[0], SimulatedLink.wrap(p[0], "shard-a"));
      System.setProperty(SimulatedLink.PROPERTY, "0");
      assertSame(p[0], SimulatedLink.wrap(p[0], "shard-a"));
      System.setProperty(SimulatedLink.PROPERTY, "ten");
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SimulatedLink.wrap(p[0], "x"));
      assertTrue(e.getMessage().contains(SimulatedLink.PROPERTY) && e.getMessage().contains("'ten'"), e.getMessage());
      System.setProperty(SimulatedLink.PROPERTY, "-1");
      assertThrows(IllegalArgumentException.class, () -> SimulatedLink.wrap(p[0], "x"));
      p[0].close();
      p[1].close();
    }
  }

  @Test
  void bytesCrossAtTheLinksSpeed_andTwoConnectionsToOneShardShareIt() throws Exception {
    System.setProperty(SimulatedLink.PROPERTY, "0.1"); // 12.5 MB/s: 2 MiB take 168 ms
    try (ServerSocketChannel server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0))) {
      SocketChannel[] a = pair(server);
      SocketChannel[] b = pair(server);
      ByteChannel pacedA = SimulatedLink.wrap(a[0], "shard-shared");
      ByteChannel pacedB = SimulatedLink.wrap(b[0], "shard-shared");
      // (a transfer may catch up on a late wake-up of up to CATCH_UP_NANOS)
      double floorMs = 2.0 * MB * 8 / 0.1e9 * 1e3 - SimulatedLink.CATCH_UP_NANOS / 1e6;

      CompletableFuture<Long> got = drain(a[1], 2 * MB);
      long t0 = System.nanoTime();
      send(pacedA, 2 * MB);
      double oneMs = (System.nanoTime() - t0) / 1e6;
      assertEquals(2L * MB, got.get());
      assertTrue(oneMs >= floorMs * 0.99, "2 MiB written in " + oneMs + " ms, under the link's " + floorMs);

      // Both connections to one shard, 1 MiB each at once: together no faster than one link.
      CompletableFuture<Long> gotA = drain(a[1], MB);
      CompletableFuture<Long> gotB = drain(b[1], MB);
      t0 = System.nanoTime();
      CompletableFuture<Void> sendB = CompletableFuture.runAsync(() -> {
        try {
          send(pacedB, MB);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, threads);
      send(pacedA, MB);
      sendB.get();
      double sharedMs = (System.nanoTime() - t0) / 1e6;
      assertEquals(MB, gotA.get() + 0L);
      assertEquals(MB, gotB.get() + 0L);
      assertTrue(sharedMs >= floorMs * 0.99, "1 MiB on each of two connections in " + sharedMs + " ms: the link is "
          + "shared, so at least " + floorMs);

      // Reads are paced too: 2 MiB sent unpaced from the server's end arrive no faster than the link.
      CompletableFuture<Void> serverSends = CompletableFuture.runAsync(() -> {
        try {
          send(a[1], 2 * MB);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, threads);
      t0 = System.nanoTime();
      ByteBuffer in = ByteBuffer.allocateDirect(2 * MB);
      BulkWire.readFully(pacedA, in);
      double readMs = (System.nanoTime() - t0) / 1e6;
      serverSends.get();
      assertTrue(readMs >= floorMs * 0.99, "2 MiB read in " + readMs + " ms, under the link's " + floorMs);
      for (SocketChannel ch : new SocketChannel[] {a[0], a[1], b[0], b[1]}) {
        ch.close();
      }
    }
  }
}
