package io.sparkps.spark.coord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.testing.RawCalls;
import io.sparkps.ps.testing.Relay;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Registration;
import io.sparkps.spark.coord.proto.Role;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CoordinatorTest {
  @ParameterizedTest(name = "tls: {0}")
  @ValueSource(booleans = {false, true})
  void callsWithoutTheRunsToken_areRefused(boolean tls) {
    PsToken token = PsToken.generate();
    PsTls identity = tls ? PsTls.generate() : null;
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, identity, new Registry(1, 2));
         CoordinatorClient intruder = new CoordinatorClient(server.address(), PsToken.of("guess"), identity,
             Duration.ofSeconds(5))) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> intruder.register(Role.PS, 0, "h", 1, 0, "x"));
      assertEquals(Status.Code.UNAUTHENTICATED, e.getStatus().getCode());
      assertTrue(server.registry().members().isEmpty());
    }
  }

  @Test
  void withTls_peersWithoutTheRunsCertificate_getNoConnection_evenWithTheToken() {
    PsToken token = PsToken.generate();
    PsTls identity = PsTls.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, identity, new Registry(1, 2))) {
      for (PsTls stranger : java.util.Arrays.asList(PsTls.generate(), null)) {
        try (CoordinatorClient c = new CoordinatorClient(server.address(), token, stranger, Duration.ofSeconds(5))) {
          StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> c.register(Role.PS, 0, "h", 1, 0, "x"));
          assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), e.getMessage());
        }
      }
      assertTrue(server.registry().members().isEmpty());
      try (CoordinatorClient own = new CoordinatorClient(server.address(), token, identity, Duration.ofSeconds(5))) {
        own.register(Role.PS, 0, "h", 1, 0, "x");
      }
      assertEquals(1, server.registry().members().size());
    }
  }

  /** A relay between a task and the coordinator records all bytes: the token crosses in clear only without TLS. */
  @ParameterizedTest(name = "tls: {0}")
  @ValueSource(booleans = {false, true})
  void sniffer_seesTheTokenAndTheRegistration_onlyWithoutTls(boolean tls) throws Exception {
    PsToken token = PsToken.generate();
    PsTls identity = tls ? PsTls.generate() : null;
    String marker = "executor-7f3a9c1e-known";
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, identity, new Registry(1, 2));
         Relay relay = new Relay("127.0.0.1", 0, new java.net.InetSocketAddress("127.0.0.1",
             Integer.parseInt(server.address().substring(server.address().lastIndexOf(':') + 1))));
         CoordinatorClient client = new CoordinatorClient(relay.address(), token, identity, Duration.ofSeconds(5))) {
      client.register(Role.PS, 0, "h", 1, 0, marker);
      assertEquals(1, server.registry().members().size());
      assertTrue(relay.seen().length > 100, "the relay carried the call");
      assertEquals(!tls, relay.saw(token.secret().getBytes(java.nio.charset.StandardCharsets.US_ASCII)), "token");
      assertEquals(!tls, relay.saw(marker.getBytes(java.nio.charset.StandardCharsets.US_ASCII)), "registration");
    }
  }

  @Test
  void awaitWorkers_namesTheMissingOnes_andHeartbeatsCarryProgressAndStop() {
    PsToken token = PsToken.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, null, new Registry(1, 3));
         CoordinatorClient client = new CoordinatorClient(server.address(), token, null, Duration.ofSeconds(5))) {
      client.register(Role.CHIEF, 0, "h0", 0, 2, "e0");
      client.register(Role.WORKER, 2, "h2", 0, 2, "e2");
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> client.awaitWorkers(2, Duration.ofMillis(300)));
      assertTrue(e.getStatus().getDescription().contains("workers [1] of stage attempt 2"), e.getMessage());
      assertEquals(false, client.heartbeat(Role.CHIEF, 0, 2, Progress.newBuilder().setStep(7).build()));
      assertEquals(7, server.registry().workerProgress().get(0).getStep());
      server.registry().stop();
      assertEquals(true, client.heartbeat(Role.CHIEF, 0, 2, Progress.getDefaultInstance()));
      assertEquals(List.of(0), server.registry().missingPs());
    }
  }

  private static Registration slot(Role role, int index, int attempt, long task) {
    return Registration.newBuilder().setRole(role).setIndex(index).setHost("h" + task).setPort(1000 + (int) task)
        .setAttempt(attempt).setTaskId(task).setExecutorId("e").build();
  }

  private static Status.Code refused(CoordinatorClient c, Registration r, String... fragments) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> c.register(r));
    for (String f : fragments) {
      assertTrue(e.getStatus().getDescription().contains(f), "'" + f + "' in " + e.getMessage());
    }
    return e.getStatus().getCode();
  }

  @Test
  void onlyTheRunsSlots_andNoLiveSlotHeldByAnotherTask_areRegistered() {
    PsToken token = PsToken.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, null, new Registry(2, 2));
         CoordinatorClient c = new CoordinatorClient(server.address(), token, null, Duration.ofSeconds(5))) {
      assertEquals(Status.Code.INVALID_ARGUMENT, refused(c, slot(Role.PS, 2, 0, 1), "no slot ps 2", "2 ps, 2 workers"));
      assertEquals(Status.Code.INVALID_ARGUMENT, refused(c, slot(Role.WORKER, -1, 0, 1), "no slot worker -1"));
      assertEquals(Status.Code.INVALID_ARGUMENT, refused(c, slot(Role.EVALUATOR, 1, 0, 1), "no slot evaluator 1"));
      assertEquals(Status.Code.INVALID_ARGUMENT, refused(c, slot(Role.PS, 0, 0, 1).toBuilder().setPort(70000).build(),
          "port 70000"));
      assertEquals(Status.Code.INVALID_ARGUMENT, refused(c, slot(Role.PS, 0, 0, 1).toBuilder().setHost("x".repeat(300))
          .build(), "longer than 255"));
      assertTrue(server.registry().members().isEmpty());

      c.register(slot(Role.WORKER, 1, 0, 11));
      c.register(slot(Role.WORKER, 1, 0, 11)); // the same task again: idempotent
      assertEquals(Status.Code.ALREADY_EXISTS, refused(c, slot(Role.WORKER, 1, 0, 12),
          "worker 1 is held by task 11", "task 12 of attempt 0 may not take it over"));
      assertEquals(11, server.registry().members().get(0).taskId(), "the holder keeps the slot");
      c.register(slot(Role.WORKER, 1, 1, 13)); // a retried stage takes it
      assertEquals(13, server.registry().members().get(0).taskId());

      c.register(slot(Role.PS, 0, 0, 21));
      assertEquals(Status.Code.ALREADY_EXISTS, refused(c, slot(Role.PS, 0, 0, 22), "ps 0 is held by task 21"));
      assertEquals("h21:1021", server.registry().psAddresses().get(0));
      server.registry().declarePsLost(0, "test", 0);
      c.register(slot(Role.PS, 0, 0, 22)); // the replacement of a lost ps
      assertEquals("h22:1022", server.registry().psAddresses().get(0));

      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> c.awaitWorkers(0, 1, 9, Duration.ofMillis(100)));
      assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
      assertTrue(e.getStatus().getDescription().contains("no worker 9"), e.getMessage());
      e = assertThrows(StatusRuntimeException.class, () -> c.awaitPs(7, "h:1", Duration.ofMillis(100)));
      assertTrue(e.getStatus().getDescription().contains("no ps 7 in this run"), e.getMessage());
    }
  }

  /**
   * A lost ps the driver relaunched: a late Spark retry of the cancelled launch may not take the slot
   * (it would count as a second loss when the relaunch registers), and the relaunch replaces it once.
   */
  @Test
  void relaunchedPs_lateRetryOfTheReplacedLaunch_isRefused_andTheLossIsCountedOnce() {
    PsToken token = PsToken.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, null, new Registry(2, 2));
         CoordinatorClient c = new CoordinatorClient(server.address(), token, null, Duration.ofSeconds(5))) {
      Registry registry = server.registry();
      c.register(slot(Role.PS, 1, 0, 21));
      assertTrue(registry.declarePsLost(1, "killed", 300));
      registry.retirePsAttemptsBefore(1, 100);
      assertEquals(Status.Code.FAILED_PRECONDITION, refused(c, slot(Role.PS, 1, 1, 22), "ps 1 attempt 1 (task 22)",
          "a launch the driver replaced", "attempts from 100 on"));
      assertEquals("h21:1021", registry.psAddresses().get(1), "the refused retry took nothing");
      c.register(slot(Role.PS, 1, 100, 23));
      c.register(slot(Role.PS, 1, 101, 24)); // Spark's retry of the relaunch itself: a real second loss
      assertEquals(List.of("h21:1021", "h23:1023"), registry.losses().stream().map(PsLoss::lostAddress).toList());
      assertEquals(List.of("h23:1023", "h24:1024"), registry.losses().stream().map(PsLoss::replacement).toList());
      assertEquals(300, registry.losses().get(0).atStep());
    }
  }

  @Test
  void everyMethod_refusesNoTokenAWrongTokenAndAWrongCertificate() throws Exception {
    PsToken token = PsToken.generate();
    PsTls tls = PsTls.generate();
    var methods = io.sparkps.spark.coord.proto.CoordinatorGrpc.getServiceDescriptor().getMethods();
    assertTrue(methods.size() >= 6, "the coordinator's methods: " + methods.size());
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, tls, new Registry(1, 2))) {
      int port = Integer.parseInt(server.address().substring(server.address().lastIndexOf(':') + 1));
      io.grpc.ManagedChannel own = io.sparkps.ps.client.RunChannels.secured(
          io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress("127.0.0.1", port), tls).build();
      io.grpc.ManagedChannel stranger = io.sparkps.ps.client.RunChannels.secured(
          io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forAddress("127.0.0.1", port), PsTls.generate()).build();
      try {
        for (io.grpc.MethodDescriptor<?, ?> m : methods) {
          Status none = RawCalls.call(own, m.getFullMethodName(), m.getType(), new byte[0]);
          assertEquals(Status.Code.UNAUTHENTICATED, none.getCode(), m.getFullMethodName() + ": " + none);
          Status wrong = RawCalls.call(io.grpc.ClientInterceptors.intercept(own,
              io.sparkps.ps.client.RunChannels.tokenOnEveryCall(PsToken.of("guess"))), m.getFullMethodName(), m.getType(), new byte[0]);
          assertEquals(Status.Code.UNAUTHENTICATED, wrong.getCode(), m.getFullMethodName() + ": " + wrong);
          Status certificate = RawCalls.call(io.grpc.ClientInterceptors.intercept(stranger,
              io.sparkps.ps.client.RunChannels.tokenOnEveryCall(token)), m.getFullMethodName(), m.getType(), new byte[0]);
          assertEquals(Status.Code.UNAVAILABLE, certificate.getCode(), m.getFullMethodName() + ": " + certificate);
        }
        assertTrue(server.registry().members().isEmpty(), "nothing got through");
      } finally {
        own.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
        stranger.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
      }
    }
  }
}
