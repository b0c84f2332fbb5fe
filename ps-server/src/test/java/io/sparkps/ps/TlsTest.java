package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.sparkps.ps.bulk.BulkClient;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.testing.Relay;
import io.sparkps.ps.tls.PsTls;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * TLS on the ps's two ports, seen from the network: a relay between client and ps records every
 * byte; with TLS neither the token nor a tensor's bytes cross in the clear, and without it (the
 * explicit opt-out) they do, which shows the sniffer works. Peers without the run's certificate
 * get no connection at all.
 */
class TlsTest {
  private static final String PS_HOST = "127.0.0.2"; // the relay takes 127.0.0.1 with the same port numbers

  @ParameterizedTest(name = "tls: {0}")
  @ValueSource(booleans = {true, false})
  void sniffer_seesNeitherTokenNorTensors_withTls_andSeesBoth_without(boolean tls) throws Exception {
    PsToken token = PsToken.generate();
    PsTls identity = tls ? PsTls.generate() : null;
    ParameterServer.Builder b = ParameterServer.builder().setShardIndex(0).setToken(token).optHost(PS_HOST).optThreads(2);
    try (ParameterServer ps = (tls ? b.optTls(identity) : b).build().start();
         Relay grpc = new Relay("127.0.0.1", 0, new InetSocketAddress(PS_HOST, ps.port()));
         Relay bulk = new Relay("127.0.0.1", ps.bulkPort(), new InetSocketAddress(PS_HOST, ps.bulkPort()))) {
      PsClient.Builder cb = PsClient.builder().setShards(List.of(grpc.address())).setToken(token)
          .optSameJvmTransfers(false).optBulkMinBytes(1 << 20);
      INDArray small = Nd4j.rand(DataType.FLOAT, 16, 16); // below the bulk size set: gRPC frames
      INDArray big = Nd4j.rand(DataType.FLOAT, 1024, 512); // 2 MiB: the bulk port
      try (PsClient c = (tls ? cb.optTls(identity) : cb).build()) {
        c.create(VariableSpec.of("small", 16, 16));
        c.create(VariableSpec.of("big", 1024, 512));
        c.initializeAll();
        c.assign("small", small);
        c.assign("big", big);
        assertEquals(small, c.pull("small"));
        assertEquals(big, c.pull("big"));
        assertEquals(tls ? "tls" : "tcp", GrpcPsClient.of(c).bulkTransport(0));
      }
      byte[] secret = token.secret().getBytes(StandardCharsets.US_ASCII);
      byte[] smallBytes = bytes(small, 32);
      byte[] bigBytes = bytes(big, 32);
      assertTrue(grpc.seen().length > 1000 && bulk.seen().length > (2 << 20), "both relays carried the traffic");
      assertEquals(!tls, grpc.saw(secret), "token on the gRPC port");
      assertEquals(!tls, grpc.saw(smallBytes), "tensor bytes on the gRPC port");
      assertEquals(!tls, bulk.saw(secret), "token on the bulk port");
      assertEquals(!tls, bulk.saw(bigBytes), "tensor bytes on the bulk port");
    }
  }

  /** The first {@code n} bytes of a tensor as they travel (little-endian float32). */
  private static byte[] bytes(INDArray a, int n) {
    ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    float[] values = a.data().asFloat();
    for (int i = 0; i < n / 4; i++) {
      b.putFloat(values[i]);
    }
    return b.array();
  }

  @Test
  void peersWithoutTheRunsCertificate_cannotConnect_toEitherPort() throws Exception {
    try (TestCluster cluster = TestCluster.tls(1)) {
      PsClient.Builder base = PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
          .optCallTimeout(Duration.ofSeconds(5));
      try (PsClient c = base.optTls(PsTls.generate()).build()) {
        PsUnavailableException e = assertThrows(PsUnavailableException.class, c::listVariables);
        assertTrue(e.getMessage().contains("ps 0"), e.getMessage());
      }
      try (PsClient plaintext = PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
          .optCallTimeout(Duration.ofSeconds(5)).build()) {
        assertThrows(PsUnavailableException.class, plaintext::listVariables);
      }
      ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
      int bulkPort = cluster.servers.get(0).bulkPort();
      try (BulkClient wrongCert = new BulkClient("127.0.0.1", bulkPort, cluster.token, PsTls.generate(),
          Duration.ofSeconds(5), timer);
           BulkClient plaintext = new BulkClient("127.0.0.1", bulkPort, cluster.token, null, Duration.ofSeconds(5), timer)) {
        for (BulkClient c : List.of(wrongCert, plaintext)) {
          StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
              () -> c.update(FrameHeader.getDefaultInstance(), List.of()));
          assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), e.getMessage());
        }
      } finally {
        timer.shutdownNow();
      }
      try (PsClient own = cluster.client(0)) {
        assertEquals(0, own.listVariables().size(), "the run's own client still gets in");
      }
    }
  }

  @Test
  void tlsClient_ofAPlaintextPs_failsAsUnavailable() {
    try (TestCluster cluster = TestCluster.netty(1);
         PsClient c = PsClient.builder().setShards(cluster.addresses()).setToken(cluster.token)
             .optTls(PsTls.generate()).optCallTimeout(Duration.ofSeconds(5)).build()) {
      assertThrows(PsUnavailableException.class, c::listVariables);
    }
  }

  @Test
  void identity_travelsSerialized_andNeverShowsItsKey() throws Exception {
    PsTls tls = PsTls.generate();
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    try (java.io.ObjectOutputStream o = new java.io.ObjectOutputStream(out)) {
      o.writeObject(tls);
    }
    PsTls copy;
    try (java.io.ObjectInputStream in = new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(out.toByteArray()))) {
      copy = (PsTls) in.readObject();
    }
    assertEquals(tls.fingerprint(), copy.fingerprint());
    assertTrue(Arrays.equals(tls.certificate().getEncoded(), copy.certificate().getEncoded()));
    assertFalse(tls.toString().contains("PRIVATE"), tls.toString());
    assertTrue(tls.certificate().getSubjectX500Principal().getName().contains("CN=" + PsTls.AUTHORITY));
    copy.certificate().checkValidity();
    copy.certificate().verify(tls.certificate().getPublicKey());
    PsToken token = PsToken.generate();
    try (ParameterServer ps = ParameterServer.builder().setShardIndex(0).setToken(token).optTls(tls).build().start();
         PsClient c = PsClient.builder().setShards(List.of(ps.address())).setToken(token).optTls(copy).build()) {
      assertEquals(0, c.listVariables().size(), "a task's deserialized copy talks to the driver's ps");
    }
  }
}
