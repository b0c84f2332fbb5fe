package io.sparkps.ps;

import io.sparkps.ps.spec.PsToken;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** P parameter servers (in process or on loopback sockets) and clients of them, for tests. */
final class TestCluster implements AutoCloseable {
  final PsToken token = PsToken.generate();
  final List<ParameterServer> servers = new ArrayList<>();
  private final List<PsClient> clients = new ArrayList<>();
  private boolean sameJvm;
  private boolean rowsOverBulk = true;
  private io.sparkps.ps.tls.PsTls tls;

  static TestCluster inProcess(int shards) {
    TestCluster c = new TestCluster();
    String run = UUID.randomUUID().toString();
    for (int i = 0; i < shards; i++) {
      c.servers.add(ParameterServer.builder().setShardIndex(i).setToken(c.token)
          .optInProcess("ps-" + run + "-" + i).build().start());
    }
    return c;
  }

  /** Shards on loopback sockets; clients move bulk data over the sockets too. */
  static TestCluster netty(int shards) {
    return netty(shards, false);
  }

  /** Shards on loopback sockets; with {@code sameJvm}, clients move bulk data through memory. */
  static TestCluster netty(int shards, boolean sameJvm) {
    TestCluster c = new TestCluster();
    c.sameJvm = sameJvm;
    for (int i = 0; i < shards; i++) {
      c.servers.add(ParameterServer.builder().setShardIndex(i).setToken(c.token).optThreads(2).build().start());
    }
    return c;
  }

  /** Shards on loopback sockets serving TLS only (gRPC and bulk), with the run's certificate. */
  static TestCluster tls(int shards) {
    TestCluster c = new TestCluster();
    c.tls = io.sparkps.ps.tls.PsTls.generate();
    for (int i = 0; i < shards; i++) {
      c.servers.add(ParameterServer.builder().setShardIndex(i).setToken(c.token).optTls(c.tls).optThreads(2)
          .build().start());
    }
    return c;
  }

  /**
   * The transport a client's bulk transfers take: {@code tcp}, {@code same-jvm} or {@code tls}; or
   * {@code grpc}: loopback sockets with the tables' rows in gRPC calls instead of the bulk port.
   */
  static TestCluster netty(int shards, String transport) {
    return switch (transport) {
      case "tls" -> tls(shards);
      case "grpc" -> {
        TestCluster c = netty(shards, false);
        c.rowsOverBulk = false;
        yield c;
      }
      case "same-jvm" -> netty(shards, true);
      case "tcp" -> netty(shards, false);
      default -> throw new IllegalArgumentException(transport);
    };
  }

  /** The run's certificate when the shards serve TLS, else null. */
  io.sparkps.ps.tls.PsTls tls() {
    return tls;
  }

  List<String> addresses() {
    return servers.stream().map(ParameterServer::address).toList();
  }

  PsClient client(int worker) {
    return client(builder().optWorker(worker));
  }

  /** A client's builder with the cluster's addresses, token and transport. */
  PsClient.Builder builder() {
    PsClient.Builder b = PsClient.builder().setShards(addresses()).setToken(token).optSameJvmTransfers(sameJvm)
        .optRowsOverBulk(rowsOverBulk);
    return tls == null ? b : b.optTls(tls);
  }

  PsClient client(PsClient.Builder builder) {
    PsClient c = builder.build();
    synchronized (clients) {
      clients.add(c);
    }
    return c;
  }

  @Override
  public void close() {
    clients.forEach(PsClient::close);
    servers.forEach(ParameterServer::close);
  }
}
