package io.sparkps.ps;

import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.EchoMessage;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.OptimizerConfig;
import io.sparkps.ps.spec.VariableInfo;
import io.sparkps.ps.spec.VariableSpec;
import io.sparkps.ps.wire.Internal;
import io.sparkps.ps.wire.ProtoConvert;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.factory.Nd4j;

/**
 * A client of all ps shards of a run: creates, initializes, pulls and pushes variables, talking
 * to the shards in parallel. Values travel straight between ND4J buffers and the wire.
 *
 * <p>Each worker uses its own client, made with its worker index: the client keeps the worker's
 * step, which SYNC and SSP groups use (a pull reads step {@link #step()}, a push sends it and
 * advances it). A client is thread-safe; closing it twice is a no-op.
 */
public final class PsClient implements AutoCloseable {
  /** System property that turns same-JVM transfers off when {@code false}; see {@link Builder#optSameJvmTransfers}. */
  public static final String SAME_JVM_PROPERTY = "sparkps.ps.sameJvmTransfers";
  /**
   * System property that sends embedding-table rows over gRPC calls instead of the shards' bulk
   * channels when {@code false} (for benchmarks that compare the two).
   */
  public static final String ROWS_OVER_BULK_PROPERTY = "sparkps.ps.rowsOverBulk";
  /** System property: the default of {@link Builder#optBulkMinBytes}. */
  public static final String BULK_MIN_BYTES_PROPERTY = "sparkps.ps.bulkMinBytes";
  private final Builder config;
  private final Connections connections;
  private final List<ShardStub> shards;
  private final VariableCatalog catalog;
  private final Transfers transfers;
  private final Pulls pulls;
  private final Recovery recovery;
  private final TableHandles tables;
  private volatile boolean closed;

  private PsClient(Builder config) {
    this.config = config;
    this.connections = new Connections(config.shards, config.token, config.tls, config.callTimeout, config.flowControlWindow,
        config.sameJvm, config.bf16);
    this.shards = connections.stubs();
    this.catalog = new VariableCatalog(new Placement(shards.size(), config.splitBytes),
        () -> all("listVariables", ShardStub::list, config.callTimeout));
    this.recovery = new Recovery(config.recovery, connections, catalog, config.worker, config.chunkBytes,
        config.callTimeout);
    SparseTransfers sparse = config.sparseDensity > 0
        ? new SparseTransfers(config.sparseDensity, config.sparsePullDensity) : null;
    this.transfers = new Transfers(connections, config.chunkBytes, config.worker, config.callTimeout, recovery, sparse,
        config.bulkMinBytes);
    this.pulls = new Pulls(connections, catalog::mayWait, config.worker, config.callTimeout, config.waitTimeout,
        recovery, sparse, config.bulkMinBytes);
    recovery.attach(transfers);
    this.tables = new TableHandles(shards, config.rowsOverBulk ? connections : null, config.worker, config.callTimeout,
        config.waitTimeout, recovery);
  }

  private <T> List<T> all(String op, java.util.function.Function<ShardStub, java.util.concurrent.CompletableFuture<T>> call,
      Duration bound) {
    return Calls.all(shards, op, call, bound, recovery);
  }

  /** A builder; {@link Builder#setShards} and {@link Builder#setToken} are required. */
  public static Builder builder() {
    return new Builder();
  }

  /** Creates a consistency group on every shard (idempotent for the same group). */
  public void createGroup(ConsistencyGroup group) {
    checkOpen();
    CreateRequest request = CreateRequest.newBuilder().addGroups(ProtoConvert.toProto(group)).build();
    all("create group '" + group.name() + "'", s -> s.create(request), config.callTimeout);
    catalog.recordGroup(group);
  }

  /**
   * Declares variables: places them (see {@link Placement}) and creates their slices on the
   * shards. Creating an existing variable with the same spec is a no-op; a different spec fails.
   */
  public void create(Collection<VariableSpec> batch) {
    checkOpen();
    Map<Integer, CreateRequest> perShard = catalog.declare(batch);
    Calls.some(shards, perShard.keySet(), "create " + batch.stream().map(VariableSpec::name).toList(), s -> s.create(perShard.get(s.index())),
        config.callTimeout, recovery);
  }

  /** {@link #create(Collection)} for one variable. */
  public void create(VariableSpec spec) {
    create(List.of(spec));
  }

  /**
   * Initializes variables from their initializers, exactly once across all concurrent callers
   * (the first wins). Returns the variables this call initialized.
   */
  public Set<String> initialize(Collection<String> names) {
    checkOpen();
    return transfers.initialize(catalog.resolveAll(names), catalog.placement());
  }

  /** Initializes every variable this client declared; see {@link #initialize(Collection)}. */
  public Set<String> initializeAll() {
    return initialize(catalog.names());
  }

  /**
   * Waits until the variables are initialized, at most {@code timeout}; the timeout's message
   * names the variables still waited for.
   */
  public void awaitInitialized(Collection<String> names, Duration timeout) {
    checkOpen();
    Map<Integer, List<String>> perShard = catalog.perShard(catalog.resolveAll(names));
    Calls.some(shards, perShard.keySet(), "awaitInitialized",
        s -> s.awaitInitialized(perShard.get(s.index()), timeout), timeout.plus(config.callTimeout), recovery);
  }

  /** The variables, of all the shards hold, that are not initialized (as TF's report_uninitialized_variables). */
  public List<String> reportUninitialized() {
    return listVariables().stream().filter(v -> !v.initialized()).map(VariableInfo::name).distinct().sorted().toList();
  }

  /** Every slice on every shard with shape, rows, version and state: for debugging. */
  public List<VariableInfo> listVariables() {
    checkOpen();
    return all("listVariables", ShardStub::list, config.callTimeout).stream()
        .flatMap(reply -> reply.getVariablesList().stream()).map(ProtoConvert::fromProto).toList();
  }

  /** The whole variable (for SYNC and SSP groups, at this worker's step). */
  public INDArray pull(String name) {
    VariableSpec spec = resolve(name);
    INDArray out = Nd4j.create(DataType.FLOAT, spec.shape(), 'c');
    pullInto(Map.of(name, out), false);
    return out;
  }

  /**
   * Pulls several variables at once into arrays of their shape (dense float32, 'c' order). With
   * {@link Builder#optSparseTransfers sparse transfers}, arrays that are the same as in this
   * client's last {@code pullInto} and unchanged since receive only the elements that moved most
   * (the others keep their values, which lag the shards' until they move enough).
   */
  public void pullInto(Map<String, INDArray> destinations) {
    pullInto(destinations, true);
  }

  private void pullInto(Map<String, INDArray> destinations, boolean mayBeSparse) {
    checkOpen();
    destinations.forEach((n, a) -> VariableCatalog.checkShape(resolve(n), a, "pull destination"));
    long step = step();
    recovery.pullStarting(destinations.keySet());
    long version = pulls.pullDense(destinations, catalog.placement(), step, false, mayBeSparse);
    transfers.readVersion(version);
    recovery.recordPull(destinations, step, version);
  }

  /**
   * With sparse transfers, subtracts from each array (of its variable's shape, dense float32) what
   * this client's pushes have not sent yet of that variable: for variables whose shards subtract
   * what is pushed (the {@link OptimizerConfig#noOp() no-op} optimizer), the values this worker
   * would hold had every push gone whole. Without sparse transfers, nothing.
   */
  public void subtractUnsent(Map<String, INDArray> arrays) {
    checkOpen();
    arrays.forEach((n, a) -> VariableCatalog.checkShape(resolve(n), a, "array"));
    transfers.subtractUnsent(arrays, catalog.placement());
  }

  /** Rows {@code [rowStart, rowEnd)} of a variable. */
  public INDArray pull(String name, long rowStart, long rowEnd) {
    VariableSpec spec = resolve(name); // checks the client is open
    if (rowStart < 0 || rowEnd > spec.rows() || rowStart >= rowEnd) {
      throw new IllegalArgumentException("rows [" + rowStart + ", " + rowEnd + ") are not within the "
          + spec.rows() + " rows of '" + name + "'");
    }
    return pulls.pullRange(spec, catalog.placement().slicesOf(name), rowStart, rowEnd, step());
  }

  /** The given rows of a variable, in the given order (for embeddings). */
  public INDArray pullRows(String name, long[] rows) {
    VariableSpec spec = resolve(name); // checks the client is open
    VariableCatalog.checkRows(spec, rows);
    return pulls.pullRows(spec, catalog.placement().slicesOf(name), rows, step());
  }

  /** The variable's value and version, without any consistency wait. */
  public VariableValue read(String name) {
    VariableSpec spec = resolve(name); // checks the client is open
    INDArray out = Nd4j.create(DataType.FLOAT, spec.shape(), 'c');
    long version = pulls.pullDense(Map.of(name, out), catalog.placement(), 0, true);
    return new VariableValue(out, version);
  }

  /**
   * Pushes gradients; each variable's optimizer is applied on its shards. Sends this worker's
   * step and advances it. A NaN or infinite gradient is rejected before anything is applied.
   */
  public void push(Map<String, INDArray> gradients) {
    checkOpen();
    transfers.update(UpdateOp.GRADIENT, gradients, catalog, "push");
    transfers.advanceStep();
  }

  /** This worker's steps with their pulls and pushes in parts, to overlap them with computation (a new one each call). */
  @Internal
  public StepParts stepParts() {
    return new StepParts(this, catalog, transfers, pulls, recovery);
  }

  /** Pushes gradients of some rows (duplicates are summed), e.g. for embeddings. */
  public void pushRows(String name, long[] rows, INDArray gradient) {
    VariableSpec spec = resolve(name); // checks the client is open
    VariableCatalog.checkRows(spec, rows);
    transfers.pushRows(spec, catalog.placement().slicesOf(name), rows, gradient);
    transfers.advanceStep();
  }

  /** Sets variables to values. */
  public void assign(Map<String, INDArray> values) {
    checkOpen();
    transfers.update(UpdateOp.ASSIGN, values, catalog, "assign");
  }

  /** Sets a variable to a value. */
  public void assign(String name, INDArray value) {
    assign(Map.of(name, value));
  }

  /** Adds to variables. */
  public void assignAdd(Map<String, INDArray> deltas) {
    checkOpen();
    transfers.update(UpdateOp.ASSIGN_ADD, deltas, catalog, "assignAdd");
  }

  /** Adds {@code delta} to every element of a variable. */
  public void assignAdd(String name, double delta) {
    VariableSpec spec = resolve(name);
    assignAdd(Map.of(name, Nd4j.valueArrayOf(spec.shape(), (float) delta)));
  }

  /**
   * Saves every shard's state below {@code dir} (a Hadoop file system path), each file written
   * whole or not at all; returns each shard's file with its size and SHA-256.
   */
  public List<ShardSnapshot> save(String dir) {
    checkOpen();
    return Snapshotting.save(shards, dir, false, Snapshotting.bound(config.callTimeout, catalog.placement().loadBytes()));
  }

  /**
   * As {@link #save}, with every embedding table whole and apart from the checkpoints: a later
   * {@code save} still holds every row changed since the previous {@code save} and builds on it.
   * What a trained model keeps of its tables ({@link #restore} reads it).
   */
  public List<ShardSnapshot> export(String dir) {
    checkOpen();
    return Snapshotting.save(shards, dir, true, Snapshotting.bound(config.callTimeout, catalog.placement().loadBytes()));
  }

  /** Restores every shard's state from {@code dir}. */
  public void restore(String dir) {
    restore(dir, List.of(), false);
  }

  /**
   * Restores every shard's state from {@code dir}, each file checked against {@code expected}
   * (size and SHA-256; none when empty) before anything of that shard is replaced; with
   * {@code verifyOnly} the files are only checked. A damaged file fails naming it.
   */
  public void restore(String dir, List<ShardSnapshot> expected, boolean verifyOnly) {
    checkOpen();
    Snapshotting.restore(shards, dir, expected, verifyOnly,
        Snapshotting.bound(config.callTimeout, catalog.placement().loadBytes()));
  }

  /**
   * Creates embedding table {@code spec} on every shard (a table that exists with the same spec is
   * kept, so every worker may call this) and returns a handle on it.
   */
  public EmbeddingTable embeddingTable(EmbeddingSpec spec) {
    checkOpen();
    return tables.open(spec);
  }

  /**
   * Creates the embedding tables {@code specs} as {@link #embeddingTable} does and returns a handle
   * that pulls and pushes all of them in one call per ps: a model of many tables (one per
   * categorical column) then pays one round trip per ps a step each way, not one per table.
   */
  public EmbeddingTableSet embeddingTables(List<EmbeddingSpec> specs) {
    checkOpen();
    return tables.openAll(specs);
  }

  /**
   * Where this client, when it refills a replaced ps, restores the ps's share of the embedding
   * tables from ({@link TableRefill}); null: they start empty there.
   */
  @Internal
  public void setTableRefill(TableRefill refill) {
    tables.refillFrom(refill);
  }

  /** Asks every shard to stop. */
  public void shutdownServers() {
    checkOpen();
    Calls.all(shards, "shutdown", ShardStub::shutdown, config.callTimeout, Calls.Recoverer.NONE);
  }

  /** A plain protobuf round trip to a shard, for measuring the transport. */
  public byte[] echo(int shard, byte[] payload) {
    checkOpen();
    EchoMessage request = EchoMessage.newBuilder().setPayload(com.google.protobuf.ByteString.copyFrom(payload)).build();
    return Calls.one(shards.get(shard), "echo", shards.get(shard).echo(request), config.callTimeout).getPayload()
        .toByteArray();
  }

  /**
   * Fails every call in flight to shard {@code shard} if it is still at {@code address}: it was
   * declared lost, and a hung ps answers nothing. With a {@link ShardRecovery} they move on.
   */
  public void dropShard(int shard, String address) {
    if (!closed && shard >= 0 && shard < shards.size()) {
      connections.drop(shard, address);
    }
  }

  /**
   * Bytes this client has sent and received over the shards' bulk ports (payloads and heads), the
   * socket traffic of its large transfers; transfers through memory and gRPC calls are not counted.
   */
  public long bulkWireBytes() {
    return connections.bulkWireBytes();
  }

  /** Bytes of table pulls and pushes so far: the calls' protobuf payloads (ids, rows, row gradients), any transport. */
  public long tableBytes() {
    return tables.bytes();
  }

  /**
   * Tells the run's supervisor (this client's {@link ShardRecovery}, if any) that the state of
   * shard {@code shard}, lost with its task, was brought back at step {@code step} from
   * {@code source} by other means than a client's copy (a checkpoint the run rolled back to).
   */
  public void reportRefill(int shard, long step, String source) {
    checkOpen();
    recovery.reportRefill(shard, step, source);
  }

  /**
   * This worker's copy of the shards it pulled whole (values of its last pull, and what recreates
   * them), to hand on when its task ends early, or null when it holds none: it has not pulled yet,
   * or it has no {@link ShardRecovery} that refills (an evaluator's, a reader's). Take it once no
   * pull of this client runs any more: it refers to the arrays pulled into.
   */
  @Internal
  public LastCopy lastCopy() {
    return recovery.lastCopy(true);
  }

  /**
   * Reads the optimizer state (momentum, Adam's moments) of the slices this worker pulls into its
   * copy of them, so that a replacement refilled from its copy ({@link #lastCopy()}) goes on with
   * that state instead of afresh; returns the bytes read. The state is as large as the optimizer's
   * arrays (Adam: twice the parameters), so a worker reads it now and then (the estimator: when
   * the time since the last read is 100 times what that read took, and at least a few seconds),
   * not every step. Does nothing without a {@link ShardRecovery} that refills.
   */
  public long copyOptimizerState() {
    checkOpen();
    return recovery.copyOptimizerState(transfers.step());
  }

  /**
   * Refills, from {@code copy} (taken from another client of the same run, see {@link #lastCopy()}),
   * each shard that holds none of the copy's variables initialized: a shard replaced after its
   * state was lost with the workers that held copies of it. One RESTORE a shard: the first refill
   * wins, so several clients may try. Each refill is reported to this client's
   * {@link ShardRecovery} as "worker W's copy of step S" followed by {@code held} (where the copy
   * was kept, e.g. " kept by executor 2"). Returns the shards this call refilled.
   */
  @Internal
  public List<Integer> refillLost(LastCopy copy, String held) {
    checkOpen();
    if (copy.numShards() != numShards()) {
      throw new IllegalArgumentException("the copy is of " + copy.numShards() + " ps shards, this client has "
          + numShards() + ": it belongs to another run");
    }
    Set<String> initialized = new java.util.HashSet<>();
    for (VariableInfo v : listVariables()) {
      if (v.initialized()) {
        initialized.add(v.shard() + "/" + v.name());
      }
    }
    List<Integer> refilled = new java.util.ArrayList<>();
    for (int shard : copy.shards()) {
      int s = shard;
      List<Placement.Slice> slices = copy.slicesOn(shard);
      if (!slices.isEmpty() && slices.stream().noneMatch(slice -> initialized.contains(s + "/" + slice.name()))
          && recovery.restore(shard, copy, copy.newestStep(), held)) {
        refilled.add(shard);
      }
    }
    return refilled;
  }

  /**
   * Asks whoever keeps copies of the run's variables from an earlier attempt (see
   * {@link ShardRecovery#requestRefill}) to refill {@code shards}, whose state was lost; whether
   * anyone may answer. The refills, if any, follow asynchronously: await them with
   * {@link #awaitInitialized}.
   */
  public boolean requestRefill(Collection<Integer> shards) {
    checkOpen();
    return recovery.requestRefill(shards);
  }

  /** The version (updates applied) of what this client's last whole pull read (its lowest slice's), or -1. */
  public long readVersion() {
    return transfers.readVersion();
  }

  /** This worker's step (SYNC: the step the next pull reads and the next push sends). */
  public long step() {
    return transfers.step();
  }

  /** Sets this worker's step, e.g. to the server's version when resuming after a restart. */
  public void setStep(long step) {
    transfers.setStep(step);
  }

  /** How bulk transfers reach a shard: {@code "same-jvm"}, {@code "tcp"}, {@code "tls"} or {@code "grpc"} (none). */
  String bulkTransport(int shard) {
    checkOpen();
    var bulk = connections.bulk(shard);
    return bulk == null ? "grpc" : bulk.transport();
  }

  /** The number of shards. */
  public int numShards() {
    return shards.size();
  }

  /** Where each declared variable lives. */
  public Placement placement() {
    return catalog.placement();
  }

  /** Closes channels and threads; idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    connections.close();
  }

  void checkOpen() {
    if (closed) {
      throw new IllegalStateException("this PsClient is closed");
    }
  }

  private VariableSpec resolve(String name) {
    checkOpen();
    return catalog.resolve(name);
  }

  /** Configures a {@link PsClient}: the options are {@link ClientOptions}'s. */
  public static final class Builder extends ClientOptions<Builder> {
    private Builder() {}

    /** Validates and connects (channels connect lazily, on the first call). */
    public PsClient build() {
      validate();
      return new PsClient(this);
    }
  }
}
