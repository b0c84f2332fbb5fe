package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.sparkps.ps.grpc.Auth;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.PsService;
import io.sparkps.ps.server.EmbeddingTables;
import io.sparkps.ps.server.ShardStore;
import io.sparkps.ps.server.TableCalls;
import io.sparkps.ps.server.Waiters;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.testing.RawCalls;
import io.sparkps.ps.tls.PsTls;
import io.sparkps.ps.wire.FloatPool;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Every method of the ps service, whatever it is, refuses a call without the run's token, with a
 * wrong one, and (on a TLS ps) from a peer without the run's certificate; the list of methods comes
 * from the service itself, so a method added later is covered too.
 */
class AuthEverywhereTest {
  private static List<ServerMethodDefinition<?, ?>> methods() {
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try {
      ShardStore store = new ShardStore(0, new Waiters(timer, Runnable::run));
      Waiters waiters = new Waiters(timer, Runnable::run);
      TableCalls tables = new TableCalls(new EmbeddingTables(0), waiters, 1000, "ps 0");
      return new ArrayList<>(new PsService(store, waiters, tables, new FloatPool(1 << 20), 1024,
          false, 1000, 0, "", () -> { }).definition().getMethods());
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void everyMethod_refusesNoTokenAWrongTokenAndAWrongCertificate() throws Exception {
    PsToken token = PsToken.generate();
    PsTls tls = PsTls.generate();
    List<ServerMethodDefinition<?, ?>> methods = methods();
    assertTrue(methods.size() >= 12, "the service's methods: " + methods.size());
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token).optTls(tls).build().start()) {
      NettyChannelBuilder own = Connections.secured(NettyChannelBuilder.forAddress("127.0.0.1", ps.port()), tls);
      NettyChannelBuilder stranger = Connections.secured(NettyChannelBuilder.forAddress("127.0.0.1", ps.port()),
          PsTls.generate());
      ManagedChannel ownChannel = own.build();
      ManagedChannel strangerChannel = stranger.build();
      try {
        for (ServerMethodDefinition<?, ?> m : methods) {
          String name = m.getMethodDescriptor().getFullMethodName();
          var type = m.getMethodDescriptor().getType();
          Status none = RawCalls.call(ownChannel, name, type, new byte[0]);
          assertEquals(Status.Code.UNAUTHENTICATED, none.getCode(), name + " without a token: " + none);
          assertTrue(none.getDescription().contains("no SparkPS token"), none.toString());
          Status wrong = RawCalls.call(ClientInterceptors.intercept(ownChannel, Auth.client(PsToken.of("guess"))),
              name, type, new byte[0]);
          assertEquals(Status.Code.UNAUTHENTICATED, wrong.getCode(), name + " with a wrong token: " + wrong);
          Status certificate = RawCalls.call(ClientInterceptors.intercept(strangerChannel, Auth.client(token)),
              name, type, new byte[0]);
          assertEquals(Status.Code.UNAVAILABLE, certificate.getCode(), name + " from another certificate: " + certificate);
        }
        // The check can fail: with the token and the certificate, a call gets through.
        Status listed = RawCalls.call(ClientInterceptors.intercept(ownChannel, Auth.client(token)),
            "sparkps.ps.v1.ParameterService/ListVariables", io.grpc.MethodDescriptor.MethodType.UNARY, new byte[0]);
        assertEquals(Status.Code.OK, listed.getCode(), listed.toString());
      } finally {
        ownChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        strangerChannel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }
}
