package io.sparkps.ps;

import io.sparkps.ps.spec.PsToken;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * One parameter-server shard: it hosts the slices of variables, and the rows of embedding tables,
 * that the placement gives to shard {@code shardIndex}, and serves them to the run's
 * {@link PsClient}s over gRPC and a bulk port (or in process, for tests). Made by
 * {@link #builder()}, started by {@link #start()}.
 *
 * <p>A server owns its threads and ports and releases them all in {@link #close()}; it stops by
 * itself when a client with the run's token calls {@link PsClient#shutdownServers()}.
 */
public interface ParameterServer extends AutoCloseable {
  /** The most elements a variable may have by default ({@link Builder#optMaxVariableElements}): 2^30, 4 GiB of float32. */
  long DEFAULT_MAX_VARIABLE_ELEMENTS = 1L << 30;

  /** A builder; {@link Builder#setShardIndex} and {@link Builder#setToken} are required. */
  static Builder builder() {
    return new Builder();
  }

  /** Binds and starts serving; returns this server. */
  ParameterServer start();

  /** The bound port (the real one when 0 was asked for), also after the server stopped; -1 in process. */
  int port();

  /** The bulk port (its number is in the hello reply); -1 in process. */
  int bulkPort();

  /** Where clients reach this shard: {@code host:port}, or {@code inprocess:name}. */
  String address();

  /** Calls waiting on this shard right now (SYNC/SSP reads, initialization waits): for inspection. */
  int pendingWaits();

  /**
   * The calls this shard took so far, by gRPC method ({@code PullEmbeddings}, {@code Update}, ...;
   * those refused for a missing token not counted), with the batches of table rows that came
   * through the bulk data plane counted under their methods' names too: for inspection, e.g. round
   * trips per step.
   */
  Map<String, Long> callsServed();

  /** The batches of table rows this shard took through its bulk data plane, by method (see {@link #callsServed}). */
  Map<String, Long> rowCallsOverBulk();

  /** This shard's index. */
  int shardIndex();

  /** Waits until the server has stopped (by {@link #close()} or a client's shutdown call). */
  boolean awaitTermination(Duration timeout) throws InterruptedException;

  /** Stops accepting calls, ends pending calls and waits, and releases every thread and port. */
  @Override
  void close();

  /** Configures a {@link ParameterServer}. */
  final class Builder {
    private int shardIndex = -1;
    private PsToken token;
    private String host = "127.0.0.1";
    private int port;
    private String inProcessName;
    private int threads = Math.max(2, Runtime.getRuntime().availableProcessors());
    private Duration maxWait = Duration.ofMinutes(10);
    private int chunkBytes = 1 << 20;
    private int flowControlWindow = 32 << 20;
    private int maxBulkConnections = 64;
    private io.sparkps.ps.tls.PsTls tls;
    private long maxVariableElements = DEFAULT_MAX_VARIABLE_ELEMENTS;

    private Builder() {}

    /** This shard's index among the run's ps shards (required). */
    public Builder setShardIndex(int shardIndex) {
      this.shardIndex = shardIndex;
      return this;
    }

    /** The run's secret (required). */
    public Builder setToken(PsToken token) {
      this.token = Objects.requireNonNull(token, "token");
      return this;
    }

    /**
     * Serve gRPC and the bulk port over TLS with the run's certificate, and require it of clients
     * (default: plaintext). Ignored in process.
     */
    public Builder optTls(io.sparkps.ps.tls.PsTls tls) {
      this.tls = Objects.requireNonNull(tls, "tls");
      return this;
    }

    /** The address to bind (default 127.0.0.1; on a cluster, the executor's own host). */
    public Builder optHost(String host) {
      this.host = Objects.requireNonNull(host, "host");
      return this;
    }

    /** The port to bind; 0 (the default) takes any free port. */
    public Builder optPort(int port) {
      if (port < 0 || port > 65535) {
        throw new IllegalArgumentException("port must be in 0..65535, got " + port);
      }
      this.port = port;
      return this;
    }

    /** Serve in process under this name instead of on a socket (for tests). */
    public Builder optInProcess(String name) {
      this.inProcessName = Objects.requireNonNull(name, "name");
      return this;
    }

    /** Handler and event-loop threads (default: the cores, at least 2). */
    public Builder optThreads(int threads) {
      if (threads < 1) {
        throw new IllegalArgumentException("threads must be >= 1, got " + threads);
      }
      this.threads = threads;
      return this;
    }

    /** The longest any server-side wait may last, whatever the client asks (default 10 min). */
    public Builder optMaxWait(Duration maxWait) {
      if (maxWait.isNegative() || maxWait.isZero()) {
        throw new IllegalArgumentException("maxWait must be > 0, got " + maxWait);
      }
      this.maxWait = maxWait;
      return this;
    }

    /**
     * Authenticated connections the bulk port serves at once (default 64); size it from the
     * clients (a few per worker). Strangers are capped apart (apart from the bulk port's authenticated ones).
     */
    public Builder optMaxBulkConnections(int n) {
      if (n < 1) {
        throw new IllegalArgumentException("maxBulkConnections must be >= 1, got " + n);
      }
      this.maxBulkConnections = n;
      return this;
    }

    /**
     * The most elements a variable may have (default 2^30, 4 GiB of float32): a create asking for
     * more is refused before anything is allocated, and so is a pull of more rows than that.
     */
    public Builder optMaxVariableElements(long elements) {
      if (elements < 1) {
        throw new IllegalArgumentException("maxVariableElements must be >= 1, got " + elements);
      }
      this.maxVariableElements = elements;
      return this;
    }

    /** Largest payload of one pulled frame (default 1 MiB). */
    public Builder optChunkBytes(int chunkBytes) {
      if (chunkBytes < 1024 || chunkBytes > (64 << 20)) {
        throw new IllegalArgumentException("chunkBytes must be in 1 KiB..64 MiB, got " + chunkBytes);
      }
      this.chunkBytes = chunkBytes;
      return this;
    }

    /** HTTP/2 flow-control window per stream (default 32 MiB). */
    public Builder optFlowControlWindow(int bytes) {
      if (bytes < 65535) {
        throw new IllegalArgumentException("flowControlWindow must be >= 65535, got " + bytes);
      }
      this.flowControlWindow = bytes;
      return this;
    }

    /** Validates and creates the (not yet started) server, of the class path's {@link PsProvider}. */
    public ParameterServer build() {
      if (shardIndex < 0) {
        throw new IllegalArgumentException("shardIndex must be >= 0, got " + shardIndex);
      }
      if (token == null) {
        throw new IllegalArgumentException("token is required: every call to the server must carry the run's PsToken");
      }
      return PsProvider.load().server(new ServerSettings(shardIndex, token, host, port, inProcessName, threads, maxWait,
          chunkBytes, flowControlWindow, maxBulkConnections, tls, maxVariableElements));
    }
  }
}
