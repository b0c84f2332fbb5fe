package io.sparkps.ps.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.server.EmbeddingTables;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.server.Waiters;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.wire.FloatPool;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BulkServerTest {
  private final PsToken token = PsToken.generate();
  private ScheduledExecutorService timer;
  private BulkServer server;
  private ShardStore store;
  private final java.util.concurrent.atomic.AtomicInteger threadNumber = new java.util.concurrent.atomic.AtomicInteger();

  @BeforeEach
  void start() throws Exception {
    timer = Executors.newSingleThreadScheduledExecutor();
    store = new ShardStore(0, new Waiters(timer, Runnable::run));
    server = server(64);
  }

  private BulkServer server(int maxConnections) throws java.io.IOException {
    return new BulkServer("127.0.0.1", token, null, new Updates(store), new Reads(store, 1 << 18),
        new TableCalls(new EmbeddingTables(0), new Waiters(timer, Runnable::run), 1000, "ps 0"), new FloatPool(1 << 20),
        r -> new Thread(r, "bulk-test-" + threadNumber.incrementAndGet()), maxConnections);
  }

  private static long directBytes() {
    return java.lang.management.ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)
        .stream().filter(b -> b.getName().equals("direct")).mapToLong(java.lang.management.BufferPoolMXBean::getMemoryUsed)
        .sum();
  }

  private static long bulkThreads() {
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith("bulk-test-")).count();
  }

  private void assertServes(BulkClient client) {
    PullRequest request = PullRequest.newBuilder().addItems(PullItem.newBuilder().setName("nope")).build();
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> client.read(request, seg -> ByteBuffer.allocate(0)));
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode(), "authenticated and served: " + e.getMessage());
  }

  @Test
  void threeThousandIdleStrangers_getNoThreadsBeyondTheCap_andTheRunsClientsStillConnect() throws Exception {
    List<java.nio.channels.SocketChannel> strangers = new java.util.ArrayList<>();
    long maxThreads = 0;
    long direct = directBytes();
    long opening = System.nanoTime();
    try {
      for (int i = 0; i < 3000; i++) {
        strangers.add(java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress("127.0.0.1", server.port())));
        if (i % 100 == 0) {
          maxThreads = Math.max(maxThreads, bulkThreads());
        }
      }
      maxThreads = Math.max(maxThreads, bulkThreads());
      // Nothing is allocated for a connection before its token checks out (a served one takes 256 KiB).
      assertTrue(directBytes() - direct < 256 << 10, "direct memory grew by " + (directBytes() - direct) + " bytes");
      // The accept loop, the handshake deadlines' thread, and one per connection waiting to authenticate.
      assertTrue(maxThreads <= BulkServer.MAX_PENDING + 2, "bulk threads: " + maxThreads);
      // Each handshake window admits MAX_PENDING strangers at the most; the rest are refused at once.
      long windows = 2 + (System.nanoTime() - opening) / (BulkServer.HANDSHAKE_MILLIS * 1_000_000L);
      assertTrue(3000 - server.refused() <= windows * BulkServer.MAX_PENDING,
          "admitted to the handshake: " + (3000 - server.refused()) + " in " + windows + " windows");
      // The idle ones are cut at the handshake deadline; then the run's own client gets in.
      long t0 = System.nanoTime();
      try (BulkClient client = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer)) {
        while (true) {
          try {
            assertServes(client);
            break;
          } catch (AssertionError | StatusRuntimeException notYet) {
            assertTrue(System.nanoTime() - t0 < 3 * BulkServer.HANDSHAKE_MILLIS * 1_000_000L,
                "the client could not get in: " + notYet);
            Thread.sleep(200);
          }
        }
      }
      java.nio.channels.SocketChannel idle = strangers.get(0);
      assertEquals(-1, idle.read(ByteBuffer.allocate(1)), "an idle stranger is disconnected");
      // Strangers still in the listen backlog when the first window closed were admitted after it;
      // each is cut at its own deadline, so the threads fall back within one more window.
      long cut = System.nanoTime() + 2 * BulkServer.HANDSHAKE_MILLIS * 1_000_000L;
      while (bulkThreads() > 2 && System.nanoTime() < cut) {
        Thread.sleep(100);
      }
      assertTrue(bulkThreads() <= 2, "bulk threads a handshake window after the client got in: " + bulkThreads()
          + " (the accept loop and the deadlines' thread are expected)");
    } finally {
      for (java.nio.channels.SocketChannel ch : strangers) {
        ch.close();
      }
    }
  }

  @Test
  void authenticatedConnectionsOverTheCap_areRefusedAsResourceExhausted() throws Exception {
    server.close();
    server = server(2);
    try (BulkClient a = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer);
         BulkClient b = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer);
         BulkClient c = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer)) {
      assertServes(a);
      assertServes(b);
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> c.update(FrameHeader.getDefaultInstance(), List.of()));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
      assertTrue(e.getStatus().getDescription().contains("serves 2 connections at the most"), e.getMessage());
      assertEquals(2, server.serving());
    }
  }

  @AfterEach
  void stop() {
    server.close();
    timer.shutdownNow();
  }

  @Test
  void wrongToken_isRefusedAtTheHandshake() {
    try (BulkClient client = new BulkClient("127.0.0.1", server.port(), PsToken.of("guess"), null, Duration.ofSeconds(5), timer)) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> client.update(FrameHeader.getDefaultInstance(), List.of()));
      assertEquals(Status.Code.UNAUTHENTICATED, e.getStatus().getCode());
      assertTrue(e.getStatus().getDescription().contains("wrong SparkPS token"), e.getMessage());
    }
  }

  /**
   * What a peer gets that ignores a refusal and stays: the refusal, then the end of the stream (the
   * server closes at once; it does not wait for a request). Returns the refusal's text.
   */
  private String refusedThenClosed(byte[] tokenBytes) throws Exception {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(5000);
      ByteBuffer hello = ByteBuffer.allocate(12 + tokenBytes.length).putInt(BulkWire.MAGIC).putInt(BulkWire.VERSION)
          .putInt(tokenBytes.length).put(tokenBytes);
      s.getOutputStream().write(hello.array());
      java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
      byte[] buf = new byte[4096];
      try {
        for (int n; (n = s.getInputStream().read(buf)) >= 0; ) {
          got.write(buf, 0, n);
        }
      } catch (java.net.SocketTimeoutException e) {
        throw new AssertionError("the bulk port kept a refused connection open: " + got, e);
      }
      return got.toString(java.nio.charset.StandardCharsets.UTF_8);
    }
  }

  @Test
  void refusedConnections_areClosed_evenWhenThePeerIgnoresTheRefusal() throws Exception {
    assertTrue(refusedThenClosed("guess".getBytes(java.nio.charset.StandardCharsets.UTF_8))
        .contains("wrong SparkPS token"));
    server.close();
    server = server(1);
    try (BulkClient holder = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer)) {
      assertServes(holder);
      assertTrue(refusedThenClosed(token.secret().getBytes(java.nio.charset.StandardCharsets.US_ASCII)).contains("serves 1 connections at the most"));
      assertServes(holder);
    }
  }

  @Test
  void readOfUnknownVariable_failsWithTheShardsMessage_andTheConnectionStaysUsable() {
    try (BulkClient client = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer)) {
      PullRequest request = PullRequest.newBuilder().addItems(PullItem.newBuilder().setName("nope")).build();
      for (int i = 0; i < 2; i++) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> client.read(request, seg -> ByteBuffer.allocate(0)));
        assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("unknown variable 'nope'"), e.getMessage());
      }
    }
  }

  /**
   * Table rows over the port: a pull of a table the shard lacks fails with its message and the
   * connection serves the next request; a rows request that carries a payload is malformed: refused
   * as INVALID_ARGUMENT naming the field, and its connection closed.
   */
  @Test
  void rowsOfAnUnknownTable_failWithTheShardsMessage_andARowsRequestWithAPayload_isRefused() throws Exception {
    try (BulkClient client = new BulkClient("127.0.0.1", server.port(), token, null, Duration.ofSeconds(5), timer)) {
      io.sparkps.ps.grpc.proto.EmbeddingPullBatch pull = io.sparkps.ps.grpc.proto.EmbeddingPullBatch.newBuilder()
          .addTables(io.sparkps.ps.grpc.proto.EmbeddingPullRequest.newBuilder().setTable("nope")
              .setIds(io.sparkps.ps.wire.PackedArrays.ofLongs(new long[] {1L}))).build();
      for (int i = 0; i < 2; i++) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> client.pullRows(pull));
        assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode(), e.getMessage());
        assertTrue(e.getStatus().getDescription().contains("embedding table 'nope' does not exist on ps 0"),
            e.getMessage());
      }
    }
    try (java.nio.channels.SocketChannel raw = java.nio.channels.SocketChannel.open(
        new java.net.InetSocketAddress("127.0.0.1", server.port()))) {
      byte[] secret = token.secret().getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      BulkWire.writeFully(raw, ByteBuffer.allocate(12 + secret.length).putInt(BulkWire.MAGIC).putInt(BulkWire.VERSION)
          .putInt(secret.length).put(secret).flip());
      assertEquals(0, BulkWire.read(raw, 1).get(), "authenticated");
      BulkWire.writeFully(raw, ByteBuffer.allocate(1 + 4 + 8).put(BulkWire.ROWS_PULL).putInt(0).putLong(8).flip());
      assertEquals(Status.Code.INVALID_ARGUMENT.value(), BulkWire.read(raw, 1).get());
      String message = new String(BulkWire.readBlock(raw), java.nio.charset.StandardCharsets.UTF_8);
      assertTrue(message.contains("carries them in its header, not 8 bytes of payload (field payload_bytes)"), message);
      BulkWire.read(raw, 8);
      raw.socket().setSoTimeout(5000);
      assertEquals(-1, raw.socket().getInputStream().read(), "the connection is closed");
    }
  }

  @Test
  void closedPort_failsAsUnavailable() {
    int port = server.port();
    server.close();
    try (BulkClient client = new BulkClient("127.0.0.1", port, token, null, Duration.ofSeconds(5), timer)) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> client.update(FrameHeader.getDefaultInstance(), List.of()));
      assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    }
  }
}
