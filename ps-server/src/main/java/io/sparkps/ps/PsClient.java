package io.sparkps.ps;

import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.ps.spec.VariableSpec;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A client of all ps shards of a run: creates, initializes, pulls and pushes variables, talking
 * to the shards in parallel. Values travel straight between ND4J buffers and the wire.
 *
 * <p>Each worker uses its own client, made with its worker index: the client keeps the worker's
 * step, which SYNC and SSP groups use (a pull reads step {@link #step()}, a push sends it and
 * advances it). A client is thread-safe; closing it twice is a no-op.
 */
public interface PsClient extends AutoCloseable {
  /** System property that turns same-JVM transfers off when {@code false} ({@link ClientOptions#optSameJvmTransfers}). */
  String SAME_JVM_PROPERTY = "sparkps.ps.sameJvmTransfers";
  /**
   * System property that sends embedding-table rows over gRPC calls instead of the shards' bulk
   * channels when {@code false} (for benchmarks that compare the two).
   */
  String ROWS_OVER_BULK_PROPERTY = "sparkps.ps.rowsOverBulk";
  /** System property: the default of {@link ClientOptions#optBulkMinBytes}. */
  String BULK_MIN_BYTES_PROPERTY = "sparkps.ps.bulkMinBytes";

  /** A builder; {@link Builder#setShards} and {@link Builder#setToken} are required. */
  static Builder builder() {
    return new Builder();
  }

  /** Creates a consistency group on every shard (idempotent for the same group). */
  void createGroup(ConsistencyGroup group);

  /**
   * Declares variables: places them (see {@link Placement}) and creates their slices on the
   * shards. Creating an existing variable with the same spec is a no-op; a different spec fails.
   */
  void create(Collection<VariableSpec> batch);

  /** {@link #create(Collection)} for one variable. */
  void create(VariableSpec spec);

  /**
   * Initializes variables from their initializers, exactly once across all concurrent callers
   * (the first wins). Returns the variables this call initialized.
   */
  Set<String> initialize(Collection<String> names);

  /** Initializes every variable this client declared; see {@link #initialize(Collection)}. */
  Set<String> initializeAll();

  /**
   * Waits until the variables are initialized, at most {@code timeout}; the timeout's message
   * names the variables still waited for.
   */
  void awaitInitialized(Collection<String> names, Duration timeout);

  /** The variables, of all the shards hold, that are not initialized (as TF's report_uninitialized_variables). */
  List<String> reportUninitialized();

  /** Every slice on every shard with shape, rows, version and state: for debugging. */
  List<VariableInfo> listVariables();

  /** The whole variable (for SYNC and SSP groups, at this worker's step). */
  INDArray pull(String name);

  /**
   * Pulls several variables at once into arrays of their shape (dense float32, 'c' order). With
   * {@link ClientOptions#optSparseTransfers sparse transfers}, arrays that are the same as in this
   * client's last {@code pullInto} and unchanged since receive only the elements that moved most
   * (the others keep their values, which lag the shards' until they move enough).
   */
  void pullInto(Map<String, INDArray> destinations);

  /**
   * With sparse transfers, subtracts from each array (of its variable's shape, dense float32) what
   * this client's pushes have not sent yet of that variable: for variables whose shards subtract
   * what is pushed (the {@link OptimizerConfig#noOp() no-op} optimizer), the values this worker
   * would hold had every push gone whole. Without sparse transfers, nothing.
   */
  void subtractUnsent(Map<String, INDArray> arrays);

  /** Rows {@code [rowStart, rowEnd)} of a variable. */
  INDArray pull(String name, long rowStart, long rowEnd);

  /** The given rows of a variable, in the given order (for embeddings). */
  INDArray pullRows(String name, long[] rows);

  /** The variable's value and version, without any consistency wait. */
  VariableValue read(String name);

  /**
   * Pushes gradients; each variable's optimizer is applied on its shards. Sends this worker's
   * step and advances it. A NaN or infinite gradient is rejected before anything is applied.
   */
  void push(Map<String, INDArray> gradients);

  /** Pushes gradients of some rows (duplicates are summed), e.g. for embeddings. */
  void pushRows(String name, long[] rows, INDArray gradient);

  /** Sets variables to values. */
  void assign(Map<String, INDArray> values);

  /** Sets a variable to a value. */
  void assign(String name, INDArray value);

  /** Adds to variables. */
  void assignAdd(Map<String, INDArray> deltas);

  /** Adds {@code delta} to every element of a variable. */
  void assignAdd(String name, double delta);

  /**
   * Saves every shard's state below {@code dir} (a Hadoop file system path), each file written
   * whole or not at all; returns each shard's file with its size and SHA-256.
   */
  List<ShardSnapshot> save(String dir);

  /**
   * As {@link #save}, with every embedding table whole and apart from the checkpoints: a later
   * {@code save} still holds every row changed since the previous {@code save} and builds on it.
   * What a trained model keeps of its tables ({@link #restore} reads it).
   */
  List<ShardSnapshot> export(String dir);

  /** Restores every shard's state from {@code dir}. */
  void restore(String dir);

  /**
   * Restores every shard's state from {@code dir}, each file checked against {@code expected}
   * (size and SHA-256; none when empty) before anything of that shard is replaced; with
   * {@code verifyOnly} the files are only checked. A damaged file fails naming it.
   */
  void restore(String dir, List<ShardSnapshot> expected, boolean verifyOnly);

  /**
   * Creates embedding table {@code spec} on every shard (a table that exists with the same spec is
   * kept, so every worker may call this) and returns a handle on it.
   */
  EmbeddingTable embeddingTable(EmbeddingSpec spec);

  /**
   * Creates the embedding tables {@code specs} as {@link #embeddingTable} does and returns a handle
   * that pulls and pushes all of them in one call per ps: a model of many tables (one per
   * categorical column) then pays one round trip per ps a step each way, not one per table.
   */
  EmbeddingTableSet embeddingTables(List<EmbeddingSpec> specs);

  /** Asks every shard to stop. */
  void shutdownServers();

  /** A plain protobuf round trip to a shard, for measuring the transport. */
  byte[] echo(int shard, byte[] payload);

  /**
   * Fails every call in flight to shard {@code shard} if it is still at {@code address}: it was
   * declared lost, and a hung ps answers nothing. With a {@link ShardRecovery} they move on.
   */
  void dropShard(int shard, String address);

  /**
   * Bytes this client has sent and received over the shards' bulk ports (payloads and heads), the
   * socket traffic of its large transfers; transfers through memory and gRPC calls are not counted.
   */
  long bulkWireBytes();

  /** Bytes of table pulls and pushes so far: the calls' protobuf payloads (ids, rows, row gradients), any transport. */
  long tableBytes();

  /**
   * Tells the run's supervisor (this client's {@link ShardRecovery}, if any) that the state of
   * shard {@code shard}, lost with its task, was brought back at step {@code step} from
   * {@code source} by other means than a client's copy (a checkpoint the run rolled back to).
   */
  void reportRefill(int shard, long step, String source);

  /**
   * Reads the optimizer state (momentum, Adam's moments) of the slices this worker pulls into its
   * copy of them, so that a replacement refilled from its copy goes on with
   * that state instead of afresh; returns the bytes read. The state is as large as the optimizer's
   * arrays (Adam: twice the parameters), so a worker reads it now and then (the estimator: when
   * the time since the last read is 100 times what that read took, and at least a few seconds),
   * not every step. Does nothing without a {@link ShardRecovery} that refills.
   */
  long copyOptimizerState();

  /**
   * Asks whoever keeps copies of the run's variables from an earlier attempt (see
   * {@link ShardRecovery#requestRefill}) to refill {@code shards}, whose state was lost; whether
   * anyone may answer. The refills, if any, follow asynchronously: await them with
   * {@link #awaitInitialized}.
   */
  boolean requestRefill(Collection<Integer> shards);

  /** The version (updates applied) of what this client's last whole pull read (its lowest slice's), or -1. */
  long readVersion();

  /** This worker's step (SYNC: the step the next pull reads and the next push sends). */
  long step();

  /** Sets this worker's step, e.g. to the server's version when resuming after a restart. */
  void setStep(long step);

  /** The number of shards. */
  int numShards();

  /** Where each declared variable lives. */
  Placement placement();

  /** Closes channels and threads; idempotent. */
  @Override
  void close();

  /** Configures a {@link PsClient}: the options are {@link ClientOptions}'s. */
  final class Builder extends ClientOptions<Builder> {
    private Builder() {}

    /** Validates and connects with the class path's {@link PsProvider} (channels connect lazily, on the first call). */
    public PsClient build() {
      return PsProvider.load().connect(settings());
    }
  }
}
