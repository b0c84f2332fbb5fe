package io.sparkps.ps.bench;

import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.tls.PsTls;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * Parameter-server transport against raw loopback TCP, measured side by side in one JVM.
 *
 * <p>Each round measures, in turn: raw NIO TCP (direct buffers, TCP_NODELAY, as many concurrent
 * streams as shards) moving the same bytes, PS push (SGD applied on the server) and PS pull (into a
 * preallocated ND4J array), with 1 and 2 shards, for 16 and 64 MiB; ratios are taken within the round and their medians printed. Then p50/p99
 * latency of a 1 KiB assignAdd against a bare protobuf unary echo on the same channel. Every
 * PS figure is taken twice, plaintext and with TLS (the run's certificate on both ports), so the
 * cost of TLS shows as a ratio of the same round.
 *
 * <p>Run: {@code mvn -q -pl ps-server exec:exec@benchmark} (after {@code mvn install -DskipTests}).
 * Arguments: rounds (default 9), latency ops (default 3000).
 */
public final class TransportBenchmark {
  private static final int[] SIZES_MIB = {16, 64};
  private static final int[] SHARDS = {1, 2};

  private TransportBenchmark() {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
    int latencyOps = args.length > 1 ? Integer.parseInt(args[1]) : 3000;
    System.out.printf("SparkPS transport benchmark: %d rounds, %d cores, Java %s, TLS by %s%n", rounds,
        Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"), PsTls.provider());
    try (RawTcp tcp1 = new RawTcp(1); RawTcp tcp2 = new RawTcp(2); Ps ps1 = new Ps(1, false); Ps ps2 = new Ps(2, false);
         Ps tls1 = new Ps(1, true); Ps tls2 = new Ps(2, true)) {
      Map<String, List<Double>> ratios = new LinkedHashMap<>();
      Map<String, List<Double>> rates = new LinkedHashMap<>();
      for (int round = -2; round < rounds; round++) {
        for (int mib : SIZES_MIB) {
          for (Ps[] pair : List.of(new Ps[] {ps1, tls1}, new Ps[] {ps2, tls2})) {
            Ps ps = pair[0];
            Ps tls = pair[1];
            // the baseline with as many concurrent streams as the shards' bulk connections
            double tcpRate = (ps.shards == 1 ? tcp1 : tcp2).throughput(mib << 20);
            record(rates, round, "tcp " + mib + " MiB, " + ps.shards + " stream" + (ps.shards > 1 ? "s" : ""), tcpRate);
            double push = ps.push(mib);
            double pull = ps.pull(mib);
            double tlsPush = tls.push(mib);
            double tlsPull = tls.pull(mib);
            String key = mib + " MiB, " + ps.shards + " shard" + (ps.shards > 1 ? "s" : "");
            record(rates, round, "push " + key, push);
            record(rates, round, "pull " + key, pull);
            record(rates, round, "tls push " + key, tlsPush);
            record(rates, round, "tls pull " + key, tlsPull);
            record(ratios, round, "push/tcp " + key, push / tcpRate);
            record(ratios, round, "pull/tcp " + key, pull / tcpRate);
            record(ratios, round, "tls push/tcp " + key, tlsPush / tcpRate);
            record(ratios, round, "tls pull/tcp " + key, tlsPull / tcpRate);
            record(ratios, round, "tls/plain push " + key, tlsPush / push);
            record(ratios, round, "tls/plain pull " + key, tlsPull / pull);
          }
        }
      }
      System.out.println();
      System.out.println("throughput, MiB/s (median of rounds):");
      rates.forEach((k, v) -> System.out.printf("  %-32s %8.0f%n", k, median(v)));
      System.out.println("ratios (median of per-round ratios; targets: plaintext >= 0.5, tls >= 0.35 of tcp):");
      ratios.forEach((k, v) -> System.out.printf("  %-32s %6.2f   (min %.2f, max %.2f)%n", k, median(v),
          v.stream().mapToDouble(Double::doubleValue).min().orElse(0),
          v.stream().mapToDouble(Double::doubleValue).max().orElse(0)));
      System.out.println("plaintext:");
      ps1.latency(latencyOps);
      System.out.println("tls:");
      tls1.latency(latencyOps);
    }
    System.exit(0);
  }

  private static void record(Map<String, List<Double>> into, int round, String key, double value) {
    if (round >= 0) {
      into.computeIfAbsent(key, k -> new ArrayList<>()).add(value);
    }
  }

  static double median(List<Double> values) {
    double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static double mibPerSecond(long bytes, long nanos) {
    return bytes / (1024.0 * 1024.0) / (nanos / 1e9);
  }

  /**
   * Raw loopback TCP over {@code streams} concurrent connections, TCP_NODELAY on both ends like the
   * bulk sockets: each stream's client writes its share of N bytes from a direct buffer, its sink
   * reads them into a direct buffer and answers one byte. The 2-shard PS figures are measured
   * against 2 streams, since 2 shards move their halves over 2 connections at once.
   */
  private static final class RawTcp implements AutoCloseable {
    private final ServerSocketChannel server;
    private final List<SocketChannel> clients = new ArrayList<>();
    private final List<ByteBuffer> sends = new ArrayList<>();
    private final java.util.concurrent.ExecutorService writers;

    RawTcp(int streams) throws IOException {
      server = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
      for (int i = 0; i < streams; i++) {
        SocketChannel client = SocketChannel.open(server.getLocalAddress());
        client.socket().setTcpNoDelay(true);
        SocketChannel accepted = server.accept();
        accepted.socket().setTcpNoDelay(true);
        Thread sink = new Thread(() -> serve(accepted), "raw-tcp-sink-" + i);
        sink.setDaemon(true);
        sink.start();
        clients.add(client);
        sends.add(ByteBuffer.allocateDirect(64 << 20));
      }
      writers = java.util.concurrent.Executors.newFixedThreadPool(streams, r -> {
        Thread t = new Thread(r, "raw-tcp-writer");
        t.setDaemon(true);
        return t;
      });
    }

    private static void serve(SocketChannel ch) {
      ByteBuffer len = ByteBuffer.allocateDirect(4);
      ByteBuffer data = ByteBuffer.allocateDirect(64 << 20);
      ByteBuffer reply = ByteBuffer.allocateDirect(1);
      try {
        while (true) {
          len.clear();
          readFully(ch, len);
          data.clear().limit(len.flip().getInt());
          readFully(ch, data);
          reply.clear();
          ch.write(reply.put((byte) 1).flip());
        }
      } catch (IOException e) {
        // closed: the benchmark is over
      }
    }

    private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
      while (b.hasRemaining()) {
        if (ch.read(b) < 0) {
          throw new IOException("closed");
        }
      }
    }

    private static Void send(SocketChannel client, ByteBuffer send, int bytes) throws IOException {
      ByteBuffer header = ByteBuffer.allocateDirect(4).putInt(bytes).flip();
      while (header.hasRemaining()) {
        client.write(header);
      }
      send.clear().limit(bytes);
      while (send.hasRemaining()) {
        client.write(send);
      }
      readFully(client, ByteBuffer.allocateDirect(1));
      return null;
    }

    double throughput(int bytes) throws Exception {
      int share = bytes / clients.size();
      long t0 = System.nanoTime();
      List<java.util.concurrent.Future<Void>> done = new ArrayList<>();
      for (int i = 0; i < clients.size(); i++) {
        SocketChannel client = clients.get(i);
        ByteBuffer send = sends.get(i);
        done.add(writers.submit(() -> send(client, send, share)));
      }
      for (java.util.concurrent.Future<Void> f : done) {
        f.get();
      }
      return mibPerSecond((long) share * clients.size(), System.nanoTime() - t0);
    }

    @Override
    public void close() throws IOException {
      writers.shutdownNow();
      for (SocketChannel client : clients) {
        client.close();
      }
      server.close();
    }
  }

  /** P shards on loopback and one client, with variables of each benchmark size. */
  private static final class Ps implements AutoCloseable {
    final int shards;
    private final List<ParameterServer> servers = new ArrayList<>();
    private final PsClient client;
    private final Map<Integer, INDArray> gradients = new LinkedHashMap<>();
    private final Map<Integer, INDArray> destinations = new LinkedHashMap<>();

    Ps(int shards, boolean tls) {
      this.shards = shards;
      PsToken token = PsToken.generate();
      PsTls identity = PsTls.generate();
      for (int i = 0; i < shards; i++) {
        ParameterServer.Builder b = ParameterServer.builder().setShardIndex(i).setToken(token);
        servers.add((tls ? b.optTls(identity) : b).build().start());
      }
      // the socket path: one JVM holds client and servers here, which would otherwise move bulk data through memory
      PsClient.Builder b = PsClient.builder().setShards(servers.stream().map(ParameterServer::address).toList())
          .setToken(token).optSameJvmTransfers(false);
      client = (tls ? b.optTls(identity) : b).build();
      for (int mib : SIZES_MIB) {
        long rows = (mib << 20) / 4 / 1024;
        client.create(VariableSpec.of(name(mib), rows, 1024));
        gradients.put(mib, Nd4j.rand(DataType.FLOAT, rows, 1024).muli(1e-3));
        destinations.put(mib, Nd4j.create(DataType.FLOAT, rows, 1024));
      }
      client.create(VariableSpec.of("small", 256));
      client.initializeAll();
    }

    private static String name(int mib) {
      return "v" + mib;
    }

    double push(int mib) {
      long t0 = System.nanoTime();
      client.push(Map.of(name(mib), gradients.get(mib)));
      return mibPerSecond((long) mib << 20, System.nanoTime() - t0);
    }

    double pull(int mib) {
      long t0 = System.nanoTime();
      client.pullInto(Map.of(name(mib), destinations.get(mib)));
      return mibPerSecond((long) mib << 20, System.nanoTime() - t0);
    }

    void latency(int ops) {
      INDArray delta = Nd4j.ones(DataType.FLOAT, 256);
      byte[] payload = new byte[1024];
      Map<String, INDArray> update = Map.of("small", delta);
      for (int i = 0; i < ops / 2; i++) {
        client.assignAdd(update);
        client.echo(0, payload);
      }
      long[] op = new long[ops];
      long[] echo = new long[ops];
      for (int i = 0; i < ops; i++) {
        long t0 = System.nanoTime();
        client.assignAdd(update);
        long t1 = System.nanoTime();
        client.echo(0, payload);
        long t2 = System.nanoTime();
        op[i] = t1 - t0;
        echo[i] = t2 - t1;
      }
      Arrays.sort(op);
      Arrays.sort(echo);
      double opP50 = op[ops / 2] / 1e3;
      double echoP50 = echo[ops / 2] / 1e3;
      System.out.printf("latency, 1 KiB, %d ops each, interleaved:%n", ops);
      System.out.printf("  assignAdd   p50 %7.1f us   p99 %7.1f us%n", opP50, op[ops * 99 / 100] / 1e3);
      System.out.printf("  bare echo   p50 %7.1f us   p99 %7.1f us%n", echoP50, echo[ops * 99 / 100] / 1e3);
      System.out.printf("  op/echo p50 %6.2f   (target <= 1.5)   p99 ratio %6.2f%n", opP50 / echoP50,
          (double) op[ops * 99 / 100] / echo[ops * 99 / 100]);
    }

    @Override
    public void close() {
      client.close();
      servers.forEach(ParameterServer::close);
    }
  }
}
