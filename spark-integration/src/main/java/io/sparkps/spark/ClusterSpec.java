package io.sparkps.spark;

import java.io.Serializable;
import java.time.Duration;
import java.util.Objects;

/**
 * The shape of a training cluster: how many ps tasks and workers (worker 0 is the chief),
 * whether an evaluator runs, the bounds of every wait, and the run's checkpoint directory.
 * Immutable; {@link Builder#build()} validates each field and names the one at fault.
 */
public final class ClusterSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int numPs;
  private final int numWorkers;
  private final boolean evaluator;
  private final Duration psStartTimeout;
  private final Duration rendezvousTimeout;
  private final Duration callTimeout;
  private final Duration syncWaitTimeout;
  private final Duration heartbeatInterval;
  private final String checkpointDir;
  private final String name;
  private final int maxStageAttempts;
  private final Duration roleTimeout;
  private final Boolean tls;
  private final boolean bf16Transfers;
  private final double sparseDensity;
  private final Duration evaluatorGrace;
  private final int metricsEvery;

  private ClusterSpec(Builder b) {
    this.numPs = b.numPs;
    this.numWorkers = b.numWorkers;
    this.evaluator = b.evaluator;
    this.psStartTimeout = b.psStartTimeout;
    this.rendezvousTimeout = b.rendezvousTimeout;
    this.callTimeout = b.callTimeout;
    this.syncWaitTimeout = b.syncWaitTimeout;
    this.heartbeatInterval = b.heartbeatInterval;
    this.checkpointDir = b.checkpointDir;
    this.name = b.name;
    this.maxStageAttempts = b.maxStageAttempts;
    this.roleTimeout = b.roleTimeout;
    this.tls = b.tls;
    this.bf16Transfers = b.bf16Transfers;
    this.sparseDensity = b.sparseDensity;
    this.evaluatorGrace = b.evaluatorGrace;
    this.metricsEvery = b.metricsEvery;
  }

  /** A worker's steps are recorded (metrics history, listeners, Spark UI) every this many (1: every step). */
  public int metricsEvery() {
    return metricsEvery;
  }

  /**
   * How long the driver lets the evaluator finish after training has ended before it cancels its
   * job: 3 heartbeats and 10 s unless set.
   */
  public Duration evaluatorGrace() {
    return evaluatorGrace != null ? evaluatorGrace : heartbeatInterval.multipliedBy(3).plusSeconds(10);
  }

  /** Whether the tasks' ps clients move values as bfloat16 over the shards' bulk ports. */
  public boolean bf16Transfers() {
    return bf16Transfers;
  }

  /** The fraction of elements the workers' pushes and pulls send (0: dense); see {@link Builder#optSparseTransfers}. */
  public double sparseDensity() {
    return sparseDensity;
  }

  /** A builder; {@link Builder#setNumPs} and {@link Builder#setNumWorkers} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** Parameter-server tasks. */
  public int numPs() {
    return numPs;
  }

  /** Workers, the chief included. */
  public int numWorkers() {
    return numWorkers;
  }

  /** Whether an evaluator task runs alongside training. */
  public boolean hasEvaluator() {
    return evaluator;
  }

  /** Task slots the run holds at once: ps + workers + evaluator. */
  public int slotsNeeded() {
    return numPs + numWorkers + (evaluator ? 1 : 0);
  }

  /**
   * How long the driver waits for every ps to register, and for the workers' barrier stage to
   * start a task once nothing of its job runs (Spark waits without end for room for all of them).
   */
  public Duration psStartTimeout() {
    return psStartTimeout;
  }

  /** How long a worker waits for all workers of its stage attempt to register. */
  public Duration rendezvousTimeout() {
    return rendezvousTimeout;
  }

  /** The deadline of each call to a parameter server or the coordinator. */
  public Duration callTimeout() {
    return callTimeout;
  }

  /** How long a SYNC or SSP read, or a barrier between workers, waits for slower workers. */
  public Duration syncWaitTimeout() {
    return syncWaitTimeout;
  }

  /** How often tasks report progress to the driver. */
  public Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  /** The run's checkpoint directory (a Hadoop path), or null. */
  public String checkpointDir() {
    return checkpointDir;
  }

  /** The run's name, shown in the Spark UI. */
  public String name() {
    return name;
  }

  /**
   * Attempts of the barrier stage at the most, for failures another attempt may get past (a lost
   * executor, a ps or peer that did not answer); a deterministic failure (bad data, the user's
   * exception) ends the run at its first attempt. Spark's {@code spark.stage.maxConsecutiveAttempts}
   * (default 4) bounds it too.
   */
  public int maxStageAttempts() {
    return maxStageAttempts;
  }

  /**
   * How long a role may go without a heartbeat before the driver declares it lost (a hung
   * process, a stopped or partitioned executor): a ps is then replaced, a worker's stage attempt
   * is killed and retried. Spark itself would wait for its network timeout (120 s by default).
   */
  public Duration roleTimeout() {
    return roleTimeout;
  }

  /**
   * Whether the run's channels (ps gRPC and bulk ports, coordinator) use TLS: {@code null} when
   * left to the run, which turns it on whenever the run spans more than one JVM (see
   * {@code RunSecurity}).
   */
  public Boolean tls() {
    return tls;
  }

  @Override
  public String toString() {
    return "ClusterSpec(ps=" + numPs + ", workers=" + numWorkers + ", evaluator=" + evaluator + ")";
  }

  /** Builds a {@link ClusterSpec}. */
  public static final class Builder {
    private int numPs;
    private int numWorkers;
    private boolean evaluator;
    private Duration psStartTimeout = Duration.ofMinutes(2);
    private Duration rendezvousTimeout = Duration.ofMinutes(5);
    private Duration callTimeout = Duration.ofSeconds(60);
    private Duration syncWaitTimeout = Duration.ofMinutes(10);
    private Duration heartbeatInterval = Duration.ofSeconds(1);
    private String checkpointDir;
    private String name = "sparkps";
    private int maxStageAttempts = 4;
    private Duration roleTimeout = Duration.ofSeconds(20);
    private Boolean tls;
    private boolean bf16Transfers;
    private double sparseDensity;
    private Duration evaluatorGrace;
    private int metricsEvery = 1;

    private Builder() {}

    /**
     * Records a worker's metrics every {@code steps} steps (default 1, every step): what listeners,
     * the history, the Spark UI and the metrics files see. The latest step is always current.
     */
    public Builder optMetricsEvery(int steps) {
      if (steps < 1) {
        throw new IllegalArgumentException("metricsEvery is " + steps + ": give a number of steps >= 1 (1 records "
            + "every step)");
      }
      this.metricsEvery = steps;
      return this;
    }

    /**
     * How long the evaluator may take to finish once training has ended (default: 3 heartbeats and
     * 10 s); past it, its job is cancelled and its remaining reports are lost. An evaluator that
     * scores saved copies after training needs more.
     */
    public Builder optEvaluatorGrace(Duration grace) {
      this.evaluatorGrace = grace;
      return this;
    }

    /**
     * Gradients and values as bfloat16 over the shards' bulk ports: half the bytes between
     * executors, each value rounded to 8 bits of mantissa on the way (the shards keep float32).
     * Transfers through memory (a ps in the worker's own JVM) stay float32. Default off.
     */
    public Builder optBf16Transfers(boolean enabled) {
      this.bf16Transfers = enabled;
      return this;
    }

    /**
     * Sparse transfers for the workers (default 0, dense): each push and pull sends at most
     * {@code density} of each large slice's elements, those that changed most, and keeps the rest
     * for later (see {@link io.sparkps.ps.ClientOptions#optSparseTransfers}). The evaluator and the
     * driver read dense. Not with bf16.
     */
    public Builder optSparseTransfers(double density) {
      if (!(density >= 0 && density <= 1)) {
        throw new IllegalArgumentException("sparse transfer density " + density + " is not within [0, 1]: give the "
            + "fraction of elements to send, such as 0.01, or 0 for dense transfers");
      }
      this.sparseDensity = density;
      return this;
    }

    /** Parameter-server tasks (required, >= 1). */
    public Builder setNumPs(int numPs) {
      this.numPs = numPs;
      return this;
    }

    /** Workers including the chief (required, >= 1). */
    public Builder setNumWorkers(int numWorkers) {
      this.numWorkers = numWorkers;
      return this;
    }

    /** Run an evaluator task (default no). */
    public Builder optEvaluator(boolean evaluator) {
      this.evaluator = evaluator;
      return this;
    }

    /** Bound of the wait for every ps to register, and for the workers' stage to start (default 2 min). */
    public Builder optPsStartTimeout(Duration timeout) {
      this.psStartTimeout = timeout;
      return this;
    }

    /** Bound of the workers' rendezvous (default 5 min). */
    public Builder optRendezvousTimeout(Duration timeout) {
      this.rendezvousTimeout = timeout;
      return this;
    }

    /** Deadline of each call (default 60 s). */
    public Builder optCallTimeout(Duration timeout) {
      this.callTimeout = timeout;
      return this;
    }

    /** Bound of SYNC/SSP reads (default 10 min). */
    public Builder optSyncWaitTimeout(Duration timeout) {
      this.syncWaitTimeout = timeout;
      return this;
    }

    /** Progress reporting interval (default 1 s). */
    public Builder optHeartbeatInterval(Duration interval) {
      this.heartbeatInterval = interval;
      return this;
    }

    /** The run's checkpoint directory (a Hadoop path). */
    public Builder optCheckpointDir(String dir) {
      this.checkpointDir = dir;
      return this;
    }

    /** The run's name in the Spark UI (default "sparkps"). */
    public Builder optName(String name) {
      this.name = Objects.requireNonNull(name, "name");
      return this;
    }

    /** Attempts of the barrier stage at the most for transient failures (default 4, as Spark's); see {@link ClusterSpec#maxStageAttempts}. */
    public Builder optMaxStageAttempts(int attempts) {
      this.maxStageAttempts = attempts;
      return this;
    }

    /** Silence after which a role is declared lost (default 20 s); see {@link ClusterSpec#roleTimeout}. */
    public Builder optRoleTimeout(Duration timeout) {
      this.roleTimeout = timeout;
      return this;
    }

    /**
     * TLS on every channel of the run, or explicitly none (default: on whenever the run spans
     * more than one JVM; a Spark conf of {@code spark.sparkps.tls.enabled} decides when this is
     * not called). Turn it off only on a network no one else can reach.
     */
    public Builder optTls(boolean enabled) {
      this.tls = enabled;
      return this;
    }

    /** Validates and builds. */
    public ClusterSpec build() {
      if (numPs < 1) {
        throw new IllegalArgumentException("numPs must be >= 1, got " + numPs);
      }
      if (numWorkers < 1) {
        throw new IllegalArgumentException("numWorkers must be >= 1, got " + numWorkers);
      }
      if (maxStageAttempts < 1) {
        throw new IllegalArgumentException("maxStageAttempts must be >= 1, got " + maxStageAttempts);
      }
      positive("psStartTimeout", psStartTimeout);
      positive("rendezvousTimeout", rendezvousTimeout);
      positive("callTimeout", callTimeout);
      positive("syncWaitTimeout", syncWaitTimeout);
      positive("heartbeatInterval", heartbeatInterval);
      positive("roleTimeout", roleTimeout);
      if (evaluatorGrace != null) {
        positive("evaluatorGrace", evaluatorGrace);
      }
      if (roleTimeout.compareTo(heartbeatInterval.multipliedBy(3)) < 0) {
        throw new IllegalArgumentException("roleTimeout (" + roleTimeout.toMillis() + " ms) must be at least 3 "
            + "heartbeat intervals (" + heartbeatInterval.toMillis() + " ms each), or a role that missed one beat "
            + "is taken for lost: raise roleTimeout or shorten heartbeatInterval");
      }
      if (bf16Transfers && sparseDensity > 0) {
        throw new IllegalArgumentException("bf16Transfers and sparseTransfers are exclusive (sparse pairs carry "
            + "float32 values): choose one");
      }
      if (checkpointDir != null && checkpointDir.isBlank()) {
        throw new IllegalArgumentException("checkpointDir must not be blank; leave it unset for no checkpoints");
      }
      return new ClusterSpec(this);
    }

    private static void positive(String field, Duration d) {
      if (d == null || d.isZero() || d.isNegative()) {
        throw new IllegalArgumentException(field + " must be > 0, got " + d);
      }
    }
  }
}
