package io.sparkps.ps.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.PsToken;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.PullItem;
import io.sparkps.ps.grpc.proto.PullRequest;
import io.sparkps.ps.server.FloatPool;
import io.sparkps.ps.server.Reads;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.Updates;
import io.sparkps.ps.server.Waiters;
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

  @BeforeEach
  void start() throws Exception {
    timer = Executors.newSingleThreadScheduledExecutor();
    ShardStore store = new ShardStore(0, new Waiters(timer, Runnable::run));
    server = new BulkServer("127.0.0.1", token, new Updates(store), new Reads(store, 1 << 18), new FloatPool(1 << 20),
        Thread::new);
  }

  @AfterEach
  void stop() {
    server.close();
    timer.shutdownNow();
  }

  @Test
  void wrongToken_isRefusedAtTheHandshake() {
    try (BulkClient client = new BulkClient("127.0.0.1", server.port(), PsToken.of("guess"), Duration.ofSeconds(5), timer)) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> client.update(FrameHeader.getDefaultInstance(), List.of()));
      assertEquals(Status.Code.UNAUTHENTICATED, e.getStatus().getCode());
      assertTrue(e.getStatus().getDescription().contains("wrong SparkPS token"), e.getMessage());
    }
  }

  @Test
  void readOfUnknownVariable_failsWithTheShardsMessage_andTheConnectionStaysUsable() {
    try (BulkClient client = new BulkClient("127.0.0.1", server.port(), token, Duration.ofSeconds(5), timer)) {
      PullRequest request = PullRequest.newBuilder().addItems(PullItem.newBuilder().setName("nope")).build();
      for (int i = 0; i < 2; i++) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
            () -> client.read(request, seg -> ByteBuffer.allocate(0)));
        assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("unknown variable 'nope'"), e.getMessage());
      }
    }
  }

  @Test
  void closedPort_failsAsUnavailable() {
    int port = server.port();
    server.close();
    try (BulkClient client = new BulkClient("127.0.0.1", port, token, Duration.ofSeconds(5), timer)) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> client.update(FrameHeader.getDefaultInstance(), List.of()));
      assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    }
  }
}
