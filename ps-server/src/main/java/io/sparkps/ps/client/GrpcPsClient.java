package io.sparkps.ps.client;

import io.sparkps.ps.ClientSettings;
import io.sparkps.ps.EmbeddingTable;
import io.sparkps.ps.EmbeddingTableSet;
import io.sparkps.ps.Placement;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.ShardRecovery;
import io.sparkps.ps.ShardSnapshot;
import io.sparkps.ps.VariableValue;
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
import io.sparkps.ps.annotation.Internal;
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
 * The gRPC implementation of a {@link PsClient}: unary calls and streams to each shard, large
 * transfers over its bulk port (or memory, for a shard in this JVM). What only SparkPS's own modules
 * call (steps in parts, a worker's last copy, table refills) is here, reached by {@link #of}.
 */
@Internal
public final class GrpcPsClient implements PsClient {
  private final ClientSettings config;
  private final Connections connections;
  private final List<ShardStub> shards;
  private final VariableCatalog catalog;
  private final Transfers transfers;
  private final Pulls pulls;
  private final Recovery recovery;
  private final TableHandles tables;
  private volatile boolean closed;

  /** Connects (lazily: channels connect on the first call) with {@code config}. */
  public static GrpcPsClient connect(ClientSettings config) {
    return new GrpcPsClient(config);
  }

  private GrpcPsClient(ClientSettings config) {
    this.config = config;
    this.connections = new Connections(config.shards(), config.token(), config.tls(), config.callTimeout(),
        config.flowControlWindow(), config.sameJvm(), config.bf16());
    this.shards = connections.stubs();
    this.catalog = new VariableCatalog(new Placement(shards.size(), config.splitBytes()),
        () -> all("listVariables", ShardStub::list, config.callTimeout()));
    this.recovery = new Recovery(config.recovery(), connections, catalog, config.worker(), config.chunkBytes(),
        config.callTimeout());
    SparseTransfers sparse = config.sparseDensity() > 0
        ? new SparseTransfers(config.sparseDensity(), config.sparsePullDensity()) : null;
    this.transfers = new Transfers(connections, config.chunkBytes(), config.worker(), config.callTimeout(), recovery,
        sparse, config.bulkMinBytes());
    this.pulls = new Pulls(connections, catalog::mayWait, config.worker(), config.callTimeout(), config.waitTimeout(),
        recovery, sparse, config.bulkMinBytes());
    recovery.attach(transfers);
    this.tables = new TableHandles(shards, config.rowsOverBulk() ? connections : null, config.worker(),
        config.callTimeout(), config.waitTimeout(), recovery);
  }

  private <T> List<T> all(String op, java.util.function.Function<ShardStub, java.util.concurrent.CompletableFuture<T>> call,
      Duration bound) {
    return Calls.all(shards, op, call, bound, recovery);
  }

  /** The gRPC client behind {@code client}, for what only SparkPS's own modules call; fails for another implementation. */
  public static GrpcPsClient of(PsClient client) {
    if (client instanceof GrpcPsClient grpc) {
      return grpc;
    }
    throw new IllegalArgumentException("this needs SparkPS's gRPC parameter-server client, got "
        + client.getClass().getName() + ": connect with PsClient.builder() and ps-server's provider");
  }

  @Override
  public void createGroup(ConsistencyGroup group) {
    checkOpen();
    CreateRequest request = CreateRequest.newBuilder().addGroups(ProtoConvert.toProto(group)).build();
    all("create group '" + group.name() + "'", s -> s.create(request), config.callTimeout());
    catalog.recordGroup(group);
  }

  @Override
  public void create(Collection<VariableSpec> batch) {
    checkOpen();
    Map<Integer, CreateRequest> perShard = catalog.declare(batch);
    Calls.some(shards, perShard.keySet(), "create " + batch.stream().map(VariableSpec::name).toList(), s -> s.create(perShard.get(s.index())),
        config.callTimeout(), recovery);
  }

  @Override
  public void create(VariableSpec spec) {
    create(List.of(spec));
  }

  @Override
  public Set<String> initialize(Collection<String> names) {
    checkOpen();
    return transfers.initialize(catalog.resolveAll(names), catalog.placement());
  }

  @Override
  public Set<String> initializeAll() {
    return initialize(catalog.names());
  }

  @Override
  public void awaitInitialized(Collection<String> names, Duration timeout) {
    checkOpen();
    Map<Integer, List<String>> perShard = catalog.perShard(catalog.resolveAll(names));
    Calls.some(shards, perShard.keySet(), "awaitInitialized",
        s -> s.awaitInitialized(perShard.get(s.index()), timeout), timeout.plus(config.callTimeout()), recovery);
  }

  @Override
  public List<String> reportUninitialized() {
    return listVariables().stream().filter(v -> !v.initialized()).map(VariableInfo::name).distinct().sorted().toList();
  }

  @Override
  public List<VariableInfo> listVariables() {
    checkOpen();
    return all("listVariables", ShardStub::list, config.callTimeout()).stream()
        .flatMap(reply -> reply.getVariablesList().stream()).map(ProtoConvert::fromProto).toList();
  }

  @Override
  public INDArray pull(String name) {
    VariableSpec spec = resolve(name);
    INDArray out = Nd4j.create(DataType.FLOAT, spec.shape(), 'c');
    pullInto(Map.of(name, out), false);
    return out;
  }

  @Override
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

  @Override
  public void subtractUnsent(Map<String, INDArray> arrays) {
    checkOpen();
    arrays.forEach((n, a) -> VariableCatalog.checkShape(resolve(n), a, "array"));
    transfers.subtractUnsent(arrays, catalog.placement());
  }

  @Override
  public INDArray pull(String name, long rowStart, long rowEnd) {
    VariableSpec spec = resolve(name); // checks the client is open
    if (rowStart < 0 || rowEnd > spec.rows() || rowStart >= rowEnd) {
      throw new IllegalArgumentException("rows [" + rowStart + ", " + rowEnd + ") are not within the "
          + spec.rows() + " rows of '" + name + "'");
    }
    return pulls.pullRange(spec, catalog.placement().slicesOf(name), rowStart, rowEnd, step());
  }

  @Override
  public INDArray pullRows(String name, long[] rows) {
    VariableSpec spec = resolve(name); // checks the client is open
    VariableCatalog.checkRows(spec, rows);
    return pulls.pullRows(spec, catalog.placement().slicesOf(name), rows, step());
  }

  @Override
  public VariableValue read(String name) {
    VariableSpec spec = resolve(name); // checks the client is open
    INDArray out = Nd4j.create(DataType.FLOAT, spec.shape(), 'c');
    long version = pulls.pullDense(Map.of(name, out), catalog.placement(), 0, true);
    return new VariableValue(out, version);
  }

  @Override
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

  @Override
  public void pushRows(String name, long[] rows, INDArray gradient) {
    VariableSpec spec = resolve(name); // checks the client is open
    VariableCatalog.checkRows(spec, rows);
    transfers.pushRows(spec, catalog.placement().slicesOf(name), rows, gradient);
    transfers.advanceStep();
  }

  @Override
  public void assign(Map<String, INDArray> values) {
    checkOpen();
    transfers.update(UpdateOp.ASSIGN, values, catalog, "assign");
  }

  @Override
  public void assign(String name, INDArray value) {
    assign(Map.of(name, value));
  }

  @Override
  public void assignAdd(Map<String, INDArray> deltas) {
    checkOpen();
    transfers.update(UpdateOp.ASSIGN_ADD, deltas, catalog, "assignAdd");
  }

  @Override
  public void assignAdd(String name, double delta) {
    VariableSpec spec = resolve(name);
    assignAdd(Map.of(name, Nd4j.valueArrayOf(spec.shape(), (float) delta)));
  }

  @Override
  public List<ShardSnapshot> save(String dir) {
    checkOpen();
    return Snapshotting.save(shards, dir, false, Snapshotting.bound(config.callTimeout(), catalog.placement().loadBytes()));
  }

  @Override
  public List<ShardSnapshot> export(String dir) {
    checkOpen();
    return Snapshotting.save(shards, dir, true, Snapshotting.bound(config.callTimeout(), catalog.placement().loadBytes()));
  }

  @Override
  public void restore(String dir) {
    restore(dir, List.of(), false);
  }

  @Override
  public void restore(String dir, List<ShardSnapshot> expected, boolean verifyOnly) {
    checkOpen();
    Snapshotting.restore(shards, dir, expected, verifyOnly,
        Snapshotting.bound(config.callTimeout(), catalog.placement().loadBytes()));
  }

  @Override
  public EmbeddingTable embeddingTable(EmbeddingSpec spec) {
    checkOpen();
    return tables.open(spec);
  }

  @Override
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

  @Override
  public void shutdownServers() {
    checkOpen();
    Calls.all(shards, "shutdown", ShardStub::shutdown, config.callTimeout(), Calls.Recoverer.NONE);
  }

  @Override
  public byte[] echo(int shard, byte[] payload) {
    checkOpen();
    EchoMessage request = EchoMessage.newBuilder().setPayload(com.google.protobuf.ByteString.copyFrom(payload)).build();
    return Calls.one(shards.get(shard), "echo", shards.get(shard).echo(request), config.callTimeout()).getPayload()
        .toByteArray();
  }

  @Override
  public void dropShard(int shard, String address) {
    if (!closed && shard >= 0 && shard < shards.size()) {
      connections.drop(shard, address);
    }
  }

  @Override
  public long bulkWireBytes() {
    return connections.bulkWireBytes();
  }

  @Override
  public long tableBytes() {
    return tables.bytes();
  }

  @Override
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

  @Override
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

  @Override
  public boolean requestRefill(Collection<Integer> shards) {
    checkOpen();
    return recovery.requestRefill(shards);
  }

  @Override
  public long readVersion() {
    return transfers.readVersion();
  }

  @Override
  public long step() {
    return transfers.step();
  }

  @Override
  public void setStep(long step) {
    transfers.setStep(step);
  }

  /** How bulk transfers reach a shard: {@code "same-jvm"}, {@code "tcp"}, {@code "tls"} or {@code "grpc"} (none). */
  public String bulkTransport(int shard) {
    checkOpen();
    var bulk = connections.bulk(shard);
    return bulk == null ? "grpc" : bulk.transport();
  }

  @Override
  public int numShards() {
    return shards.size();
  }

  @Override
  public Placement placement() {
    return catalog.placement();
  }

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
}
