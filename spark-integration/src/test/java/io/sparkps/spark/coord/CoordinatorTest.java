package io.sparkps.spark.coord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.PsToken;
import io.sparkps.spark.coord.proto.Progress;
import io.sparkps.spark.coord.proto.Role;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class CoordinatorTest {
  @Test
  void callsWithoutTheRunsToken_areRefused() {
    PsToken token = PsToken.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, new Registry(1, 2));
         CoordinatorClient intruder = new CoordinatorClient(server.address(), PsToken.of("guess"), Duration.ofSeconds(5))) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> intruder.register(Role.PS, 0, "h", 1, 0, "x"));
      assertEquals(Status.Code.UNAUTHENTICATED, e.getStatus().getCode());
      assertTrue(server.registry().members().isEmpty());
    }
  }

  @Test
  void awaitWorkers_namesTheMissingOnes_andHeartbeatsCarryProgressAndStop() {
    PsToken token = PsToken.generate();
    try (CoordinatorServer server = new CoordinatorServer("127.0.0.1", token, new Registry(1, 3));
         CoordinatorClient client = new CoordinatorClient(server.address(), token, Duration.ofSeconds(5))) {
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
}
