package io.sparkps.ps;

import io.sparkps.ps.spec.PsToken;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The options of a {@link PsClient.Builder}, each checked as it is set: where the shards are, the
 * run's token, this client's worker index, bounds of calls and waits, transfer sizes, and how lost
 * shards are survived.
 *
 * @param <B> the builder type the setters return
 */
abstract class ClientOptions<B extends ClientOptions<B>> {
  List<String> shards;
  PsToken token;
  io.sparkps.ps.tls.PsTls tls;
  int worker;
  Duration callTimeout = Duration.ofSeconds(60);
  Duration waitTimeout = Duration.ofMinutes(5);
  long splitBytes = Placement.DEFAULT_SPLIT_BYTES;
  int chunkBytes = 1 << 20;
  int flowControlWindow = 32 << 20;
  boolean sameJvm = !"false".equalsIgnoreCase(System.getProperty(PsClient.SAME_JVM_PROPERTY, "true"));
  long bulkMinBytes = Long.getLong(PsClient.BULK_MIN_BYTES_PROPERTY, 0);
  boolean rowsOverBulk = !"false".equalsIgnoreCase(System.getProperty(PsClient.ROWS_OVER_BULK_PROPERTY, "true"));
  boolean bf16;
  double sparseDensity;
  double sparsePullDensity;
  ShardRecovery recovery;

  /** The shards' addresses, index i for shard i: {@code host:port} or {@code inprocess:name} (required). */
  public B setShards(List<String> addresses) {
    this.shards = List.copyOf(addresses);
    return self();
  }

  /** The run's secret (required). */
  public B setToken(PsToken token) {
    this.token = Objects.requireNonNull(token, "token");
    return self();
  }

  /**
   * TLS with the run's certificate on every connection to the shards (gRPC and bulk), which must
   * serve with the same one (default: plaintext, for shards in this process or a trusted host).
   */
  public B optTls(io.sparkps.ps.tls.PsTls tls) {
    this.tls = Objects.requireNonNull(tls, "tls");
    return self();
  }

  /** This client's worker index, for SYNC and SSP groups (default 0). */
  public B optWorker(int worker) {
    if (worker < 0) {
      throw new IllegalArgumentException("worker must be >= 0, got " + worker);
    }
    this.worker = worker;
    return self();
  }

  /** Deadline of each call that does not wait (default 60 s); waits add their own bound. */
  public B optCallTimeout(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("callTimeout must be > 0, got " + timeout);
    }
    this.callTimeout = timeout;
    return self();
  }

  /** Longest a SYNC or SSP pull waits for slower workers (default 5 min). */
  public B optWaitTimeout(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("waitTimeout must be > 0, got " + timeout);
    }
    this.waitTimeout = timeout;
    return self();
  }

  /** Variables of at least this many bytes are split across all shards (default 256 KiB). */
  public B optSplitBytes(long bytes) {
    if (bytes < 1) {
      throw new IllegalArgumentException("splitBytes must be >= 1, got " + bytes);
    }
    this.splitBytes = bytes;
    return self();
  }

  /** Largest payload of one frame (default 1 MiB). */
  public B optChunkBytes(int bytes) {
    if (bytes < 1024 || bytes > (64 << 20)) {
      throw new IllegalArgumentException("chunkBytes must be in 1 KiB..64 MiB, got " + bytes);
    }
    this.chunkBytes = bytes;
    return self();
  }

  /** HTTP/2 flow-control window per stream (default 32 MiB). */
  public B optFlowControlWindow(int bytes) {
    if (bytes < 65535) {
      throw new IllegalArgumentException("flowControlWindow must be >= 65535, got " + bytes);
    }
    this.flowControlWindow = bytes;
    return self();
  }

  /**
   * Dense transfers to a shard of fewer bytes go as gRPC calls instead of over its bulk port
   * (default 0: every transfer takes the bulk port when the shard has one, measured faster for
   * small ones too; or the system property {@value PsClient#BULK_MIN_BYTES_PROPERTY}). A shard in
   * this JVM is reached through memory whatever the size.
   */
  public B optBulkMinBytes(long bytes) {
    if (bytes < 0) {
      throw new IllegalArgumentException("bulkMinBytes must be >= 0, got " + bytes);
    }
    this.bulkMinBytes = bytes;
    return self();
  }

  /**
   * Whether embedding tables' rows and gradients travel over the shards' bulk channels (default
   * true: their bulk ports, or memory for a shard in this JVM) or in gRPC calls (false, or the
   * system property {@value PsClient#ROWS_OVER_BULK_PROPERTY}). Either way a step costs one
   * request per ps each way; a bulk port that cannot be reached sends them over gRPC.
   */
  public B optRowsOverBulk(boolean enabled) {
    this.rowsOverBulk = enabled;
    return self();
  }

  /**
   * Whether bulk transfers to a shard in this JVM go through memory instead of its loopback
   * socket (default true, or the system property {@value PsClient#SAME_JVM_PROPERTY}). Such
   * shards are found by a random id in their hello reply and must take this client's token.
   */
  public B optSameJvmTransfers(boolean enabled) {
    this.sameJvm = enabled;
    return self();
  }

  /**
   * Whether values travel as bfloat16 over the shards' bulk ports (default false): gradients
   * pushed and values pulled in transfers of 1 MiB and more per shard take half the bytes, rounded
   * to bfloat16 (8 bits of mantissa) on the way; the shards keep and update float32. Transfers
   * through memory (a shard in this JVM) and over gRPC stay float32.
   */
  public B optBf16Transfers(boolean enabled) {
    this.bf16 = enabled;
    return self();
  }

  /**
   * Sparse transfers (default 0, off): with {@code density} in (0, 1], each gradient push sends,
   * per slice of 4,096 elements or more, at most
   * that fraction of its elements: those of largest magnitude after adding what earlier pushes did
   * not send (kept here, one float per element of the variables pushed). Each {@code pullInto}
   * into the same arrays receives at most that fraction: the elements that moved most since this
   * worker's last pull (the shard keeps a copy of what each such worker holds). Pairs of an int32
   * index and a float32 value travel over the bulk port (or through memory to a shard in this
   * JVM); over gRPC the same update goes dense. For ASYNC and SSP groups, whose workers need not
   * see the same values; not with bf16.
   */
  public B optSparseTransfers(double density) {
    return optSparseTransfers(density, density);
  }

  /**
   * As {@link #optSparseTransfers(double)}, a pull receiving up to {@code pullDensity} of each
   * slice: with N workers each sending {@code density} per step, {@code N * density} lets a pull
   * bring every element that changed in a round of steps.
   */
  public B optSparseTransfers(double density, double pullDensity) {
    for (double d : new double[] {density, pullDensity}) {
      if (!(d >= 0 && d <= 1)) {
        throw new IllegalArgumentException("sparse transfer density " + d + " is not within [0, 1]: give the "
            + "fraction of elements to send, such as 0.01, or 0 for dense transfers");
      }
    }
    if ((density > 0) != (pullDensity > 0)) {
      throw new IllegalArgumentException("sparse transfers need both densities above 0, or both 0; got " + density
          + " and " + pullDensity);
    }
    this.sparseDensity = density;
    this.sparsePullDensity = pullDensity;
    return self();
  }

  /**
   * Survives lost shards: calls to a shard that fail as unreachable or timed out move to its
   * replacement, which this client refills (see {@link ShardRecovery}). Default: none, such
   * failures are thrown.
   */
  public B optRecovery(ShardRecovery recovery) {
    this.recovery = recovery;
    return self();
  }

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /** The options, checked: what a {@link PsProvider} connects a client with. */
  ClientSettings settings() {
    validate();
    return new ClientSettings(shards, token, tls, worker, callTimeout, waitTimeout, splitBytes, chunkBytes,
        flowControlWindow, sameJvm, bulkMinBytes, rowsOverBulk, bf16, sparseDensity, sparsePullDensity, recovery);
  }

  private void validate() {
    if (shards == null || shards.isEmpty()) {
      throw new IllegalArgumentException("shards must list at least one ps address");
    }
    if (bf16 && sparseDensity > 0) {
      throw new IllegalArgumentException("bf16 and sparse transfers are exclusive: sparse pairs carry float32 values; "
          + "choose one");
    }
    if (token == null) {
      throw new IllegalArgumentException("token is required: the servers reject calls without the run's PsToken");
    }
  }
}
