package io.sparkps.ps.client;

import io.sparkps.ps.Placement;
import io.sparkps.ps.ShardRecovery;
import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.OptimizerState;
import io.sparkps.ps.grpc.proto.OptimizerStateRequest;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.spec.EmbeddingSpec;
import io.sparkps.ps.spec.PsAuthenticationException;
import io.sparkps.ps.spec.PsException;
import io.sparkps.ps.spec.PsUnavailableException;
import io.sparkps.ps.wire.ProtoConvert;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's side of surviving a lost shard (see {@link ShardRecovery}): when a call to a shard
 * fails as unreachable or timed out, asks whether the shard was replaced, points the client at
 * the replacement, and refills it before the call's part is repeated.
 *
 * <p>The refill recreates the shard's groups and slices (idempotent) and sends one RESTORE of all
 * its slices (the first client's wins): values from this client's last {@code pullInto}, which
 * for a training worker are the parameters it computes with. Only a client with a copy of every
 * slice of the shard refills; the others wait for a refill (see {@link #refill}). The restoring
 * worker's next step becomes the SYNC version, so a step whose sums died with the old shard is
 * skipped there, not waited for.
 */
final class Recovery implements Calls.Recoverer {
  /** Longest a worker with no copy of a replaced shard waits for another to refill it. */
  static final Duration NO_COPY_WAIT = Duration.ofSeconds(15);
  private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);
  private final ShardRecovery hook;
  private final Connections connections;
  private final VariableCatalog catalog;
  private final int worker;
  private final int chunkBytes;
  private final Duration callTimeout;
  private final Object[] locks;
  private volatile Transfers transfers;
  /** This client's copy of each variable it pulled: the array it pulled into, at which step, the version read. */
  private volatile Map<String, LastCopy.Value> lastPulled;
  /** The embedding tables this client made, recreated on a replacement; where their rows come back from. */
  private final Map<String, EmbeddingSpec> tables = new java.util.concurrent.ConcurrentSkipListMap<>();
  private volatile TableRefill tableRefill;
  /** This client's copy of the optimizer state of the slices it pulls, read now and then ({@link #copyOptimizerState}). */
  private volatile Map<Placement.Slice, LastCopy.State> lastState = Map.of();

  Recovery(ShardRecovery hook, Connections connections, VariableCatalog catalog, int worker, int chunkBytes,
      Duration callTimeout) {
    this.hook = hook;
    this.connections = connections;
    this.catalog = catalog;
    this.worker = worker;
    this.chunkBytes = chunkBytes;
    this.callTimeout = callTimeout;
    this.locks = new Object[connections.stubs().size()];
    for (int i = 0; i < locks.length; i++) {
      locks[i] = new Object();
    }
  }

  void attach(Transfers t) {
    this.transfers = t;
  }

  /** Each embedding table's rows as this client last pulled them for training. */
  private final Map<String, LastCopy.Rows> lastRows = new java.util.concurrent.ConcurrentHashMap<>();

  /** Remembers the rows of a training pull of table {@code spec} as this client's copy of them. */
  void recordRows(EmbeddingSpec spec, long[] ids, float[] rows, long step) {
    if (hook != null) {
      lastRows.put(spec.name(), new LastCopy.Rows(ids, rows, spec.dim(), step));
    }
  }

  /** Variables whose pull into this client's arrays started and did not complete: their arrays may be torn. */
  private final java.util.Set<String> pulling = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** A pull into these variables' arrays starts (a copy of them is torn until it completes). */
  void pullStarting(java.util.Collection<String> names) {
    if (hook != null) {
      pulling.addAll(names);
    }
  }

  /** Remembers the arrays of a completed pull as this client's copy of those variables. */
  void recordPull(Map<String, INDArray> destinations, long step, long minVersion) {
    if (hook != null) {
      lastPulled = copies(destinations, step, minVersion);
      pulling.removeAll(destinations.keySet());
    }
  }

  /**
   * Remembers the arrays of a completed part of a step's pull ({@link StepParts#pull}) in place of
   * the copy of those variables, keeping the copy of the others: a shard lost between parts is
   * refilled from what the worker holds, each variable as of its latest part.
   */
  synchronized void recordPullPart(Map<String, INDArray> destinations, long step, long version) {
    if (hook != null) {
      Map<String, LastCopy.Value> merged = new java.util.HashMap<>(lastPulled == null ? Map.of() : lastPulled);
      merged.putAll(copies(destinations, step, version));
      lastPulled = Map.copyOf(merged);
      pulling.removeAll(destinations.keySet());
    }
  }

  private static Map<String, LastCopy.Value> copies(Map<String, INDArray> arrays, long step, long version) {
    Map<String, LastCopy.Value> out = new java.util.HashMap<>();
    arrays.forEach((name, array) -> out.put(name, new LastCopy.Value(array, step, version)));
    return Map.copyOf(out);
  }

  void tableCreated(EmbeddingSpec spec) {
    tables.put(spec.name(), spec);
  }

  void tableRefill(TableRefill refill) {
    this.tableRefill = refill;
  }

  /** Passes a refill made by other means (a checkpoint) to the supervisor, if there is one. */
  void reportRefill(int shard, long step, String source) {
    if (hook != null) {
      hook.restored(shard, step, source);
    }
  }

  /** Asks the supervisor for kept copies to refill {@code shards}; whether anyone may answer. */
  boolean requestRefill(java.util.Collection<Integer> shards) {
    return hook != null && hook.requestRefill(shards);
  }

  @Override
  public boolean recover(ShardStub failed, RuntimeException failure) {
    if (hook == null || !mayBeLost(failure) || Thread.currentThread().isInterrupted()) {
      return false;
    }
    int shard = failed.index();
    synchronized (locks[shard]) {
      if (connections.stubs().get(shard) != failed) {
        return true; // another call of this client moved to the replacement (and refilled it) already
      }
      String next;
      try {
        next = hook.awaitReplacement(shard, failed.address());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (RuntimeException e) {
        failure.addSuppressed(e);
        return false;
      }
      if (next == null || next.equals(failed.address())) {
        return false;
      }
      LOG.info("SparkPS worker {}: ps {} at {} failed ({}); it serves at {} now", worker, shard, failed.address(),
          failure.getMessage(), next);
      connections.replace(shard, next);
      try {
        refill(shard);
      } catch (PsException | IllegalStateException | IllegalArgumentException e) {
        // Whatever went wrong, the shard was lost: another attempt (of the call, or of the stage)
        // meets a replacement that is refilled by then, so this is never a deterministic failure.
        throw e instanceof PsUnavailableException u ? u : new PsUnavailableException("ps " + shard
            + " was replaced by " + next + " but worker " + worker + " could not refill it: " + e.getMessage(), e);
      }
    }
    return true;
  }

  private static boolean mayBeLost(RuntimeException failure) {
    // Unreachable, timed out, or a transport failure ("channel closed", a reset stream): the
    // supervisor knows whether the shard still serves, and says so at once if it does.
    return failure instanceof PsException && !(failure instanceof PsAuthenticationException);
  }

  /**
   * Refills the replacement of {@code shard} from this client's last pull, or waits until another
   * client has. Only a training worker holding a copy of every slice of the shard refills: an
   * evaluator's or a reader's copy is older, and a client without a copy (one that has not pulled
   * yet) has nothing but the initializers, which would put fresh values beside the other shards'
   * trained ones. Such clients wait, bounded, for a refill; when none comes, their call fails as
   * transient, and the chief of the retried stage rolls the run back to its latest checkpoint.
   * Only refilling clients recreate the shard's variables: a client that learned them from the
   * shards knows their shapes and optimizers but not their initializers.
   */
  private void refill(int shard) {
    List<ShardStub> shards = connections.stubs();
    // (A pull in flight here is the call being recovered: its failed part is repeated after the
    // refill and reads the refilled values, so the copy is not taken as cut off.)
    LastCopy copy = hook.refills() ? lastCopy(false) : null;
    if (copy == null || !copy.shards().contains(shard)) {
      // A worker without a copy waits briefly: one holding a copy refills within seconds of the
      // replacement serving, or none will (then the stage's retry rolls back to a checkpoint).
      Duration wait = hook.refills() && NO_COPY_WAIT.compareTo(hook.refillWait()) < 0 ? NO_COPY_WAIT : hook.refillWait();
      List<String> names = catalog.slicesOn(shard).stream().map(Placement.Slice::name).distinct().toList();
      LOG.info("SparkPS worker {}: waits up to {} s for a worker holding a copy to refill ps {}", worker,
          wait.toSeconds(), shard);
      Calls.some(shards, List.of(shard), "await the refill of the replacement by a worker holding a copy",
          s -> s.awaitInitialized(names, wait), wait.plus(callTimeout), this);
      return;
    }
    restore(shard, copy, transfers.step(), "");
  }

  /**
   * This client's copy of every shard of which it pulled all slices, with what recreates them, or
   * null when it holds none (it has not pulled yet, or it is not a refilling worker's client);
   * taken once this client's work has {@code ended}, it names the variables whose pull was cut off.
   */
  LastCopy lastCopy(boolean ended) {
    Map<String, LastCopy.Value> copy = lastPulled;
    if (hook == null || !hook.refills() || copy == null) {
      return null;
    }
    Map<Integer, List<Placement.Slice>> covered = new java.util.HashMap<>();
    Map<Integer, CreateRequest> creates = new java.util.HashMap<>();
    for (int shard = 0; shard < connections.stubs().size(); shard++) {
      List<Placement.Slice> slices = catalog.slicesOn(shard);
      // (A shard that holds only embedding tables is recreated from the tables' specs.)
      if (slices.isEmpty() ? !tables.isEmpty() : slices.stream().allMatch(slice -> copy.containsKey(slice.name()))) {
        covered.put(shard, slices);
        creates.put(shard, catalog.createRequest(shard));
      }
    }
    return covered.isEmpty() ? null
        : new LastCopy(worker, connections.stubs().size(), copy, covered, creates, tables, tableRefill,
            ended ? new java.util.TreeSet<>(pulling) : java.util.Set.of(), lastRows, lastState);
  }

  /**
   * Reads the optimizer state of every slice whose variable this client pulls, as its copy of that
   * state beside the values of its pulls, at step {@code step}; returns the bytes read. A shard
   * that does not answer keeps its older copy (the training thread meets the loss at its next
   * call, and recovers there). Only a client that refills keeps one.
   */
  long copyOptimizerState(long step) {
    Map<String, LastCopy.Value> pulled = lastPulled;
    if (hook == null || !hook.refills() || pulled == null) {
      return 0;
    }
    List<ShardStub> shards = connections.stubs();
    Map<Placement.Slice, LastCopy.State> copy = new java.util.HashMap<>(lastState);
    long per = stateChunk();
    long bytes = 0;
    for (int shard = 0; shard < shards.size(); shard++) {
      java.util.Set<String> stateless = stateless(catalog.createRequest(shard));
      for (Placement.Slice slice : catalog.slicesOn(shard)) {
        if (!pulled.containsKey(slice.name()) || stateless.contains(slice.name())) {
          continue;
        }
        float[][] arrays = null;
        long steps = 0;
        try {
          for (long at = 0; at < slice.length(); at += per) {
            OptimizerStateRequest request = OptimizerStateRequest.newBuilder().setName(slice.name())
                .setOffset(slice.offset() + at).setCount(Math.min(per, slice.length() - at)).build();
            OptimizerState part = Calls.some(shards, List.of(shard), "read the optimizer state of '" + slice.name()
                + "'", s -> s.readOptimizerState(request), callTimeout, Calls.Recoverer.NONE).get(0);
            if (arrays == null) {
              arrays = new float[part.getStatesCount()][(int) slice.length()];
              steps = part.getSteps();
            }
            for (int k = 0; k < arrays.length; k++) {
              float[] floats = io.sparkps.ps.wire.PackedArrays.floats(part.getStates(k), "states");
              System.arraycopy(floats, 0, arrays[k], (int) at, floats.length);
              bytes += floats.length * (long) Float.BYTES;
            }
          }
        } catch (PsException e) {
          LOG.debug("SparkPS worker {}: kept its older copy of the optimizer state of '{}' on ps {}: {}", worker,
              slice.name(), shard, e.toString());
          continue;
        }
        copy.put(slice, new LastCopy.State(arrays, steps, step));
      }
    }
    lastState = Map.copyOf(copy);
    return bytes;
  }

  /**
   * Recreates {@code shard}'s groups, slices and tables on the shard this client reaches and
   * restores the slices from {@code copy} (one RESTORE: the first refill wins, later ones are
   * no-ops), as of this client's step {@code step}; {@code held} says where the copy was kept
   * ("" for this client's own). Whether this call filled the shard.
   */
  boolean restore(int shard, LastCopy copy, long step, String held) {
    List<ShardStub> shards = connections.stubs();
    CreateRequest create = copy.createRequest(shard);
    Calls.some(shards, List.of(shard), "recreate the variables on the replacement", s -> s.create(create), callTimeout,
        this);
    // The tables first: the variables' refill below releases the workers waiting for it.
    String tablesSource = refillTables(shard, step, copy.tables(), copy.tableRefill());
    // The optimizer state before the values: their RESTORE keeps it, and releases the waiting workers.
    String stateSource = restoreOptimizerState(shard, copy);
    List<TensorCodec.Piece> pieces = new ArrayList<>();
    TreeSet<String> copied = new TreeSet<>();
    long version = Long.MAX_VALUE;
    long oldest = Long.MAX_VALUE;
    long newest = Long.MIN_VALUE;
    for (Placement.Slice slice : copy.slicesOn(shard)) {
      LastCopy.Value c = copy.values().get(slice.name());
      ByteBuffer bytes = TensorCodec.range(TensorCodec.bytes(TensorCodec.dense(c.array())), slice.offset(),
          slice.length());
      pieces.add(new TensorCodec.Piece(slice.name(), slice.offset(), List.of(), bytes));
      copied.add(slice.name());
      version = Math.min(version, c.version());
      oldest = Math.min(oldest, c.step());
      newest = Math.max(newest, c.step());
    }
    if (pieces.isEmpty()) {
      tablesSource += refillRows(shard, copy);
      if (!tablesSource.isEmpty()) {
        hook.restored(shard, step, tablesSource.substring(2));
      }
      return !tablesSource.isEmpty();
    }
    FrameHeader header = FrameHeader.newBuilder().setOp(UpdateOp.RESTORE).setWorker(worker).setStep(step + 1).build();
    long readVersion = version;
    UpdateReply reply = Calls.some(shards, List.of(shard), "refill the replacement",
        s -> s.update(TensorCodec.frames(header, pieces, chunkBytes, readVersion)), callTimeout, this).get(0);
    // Pulled in parts (layer by layer), a copy may hold some variables of one step and some of the next.
    TreeSet<String> torn = new TreeSet<>(copied);
    torn.retainAll(copy.cutOff());
    String of = LastCopy.steps(oldest, newest, torn);
    if (reply.getInitializedCount() == 0) {
      LOG.info("SparkPS worker {}: ps {} was refilled by another worker already", worker, shard);
      return false;
    }
    // Only the refill that won sets the rows it holds: a later one's could undo updates made since.
    tablesSource += refillRows(shard, copy);
    LOG.info("SparkPS worker {}: refilled ps {} with {}'s copy of {} {}{}", worker, shard,
        held.isEmpty() ? "its" : "worker " + copy.worker(), of, copied, held);
    hook.restored(shard, step, "worker " + copy.worker() + "'s copy of " + of + " " + copied + held + stateSource
        + tablesSource);
    return true;
  }

  /** Elements of a slice's optimizer state in one call: two state arrays (Adam's) of a range fit in one chunk. */
  private long stateChunk() {
    return Math.max(1, chunkBytes / (2 * Float.BYTES));
  }

  /** The variables of a shard whose optimizer keeps no state (plain SGD): nothing to copy, restore or miss. */
  private static java.util.Set<String> stateless(CreateRequest shard) {
    java.util.Set<String> names = new java.util.HashSet<>();
    for (io.sparkps.ps.grpc.proto.SliceDecl decl : shard.getSlicesList()) {
      io.sparkps.ps.grpc.proto.OptimizerKind kind = decl.getSpec().getOptimizer().getKind();
      if (kind == io.sparkps.ps.grpc.proto.OptimizerKind.SGD || kind == io.sparkps.ps.grpc.proto.OptimizerKind.NO_OP) {
        names.add(decl.getSpec().getName());
      }
    }
    return names;
  }

  /**
   * Restores, into the replacement's slices of {@code shard} not initialized yet, the optimizer
   * state the copy holds of them; returns what was done, for the supervisor.
   */
  private String restoreOptimizerState(int shard, LastCopy copy) {
    List<ShardStub> shards = connections.stubs();
    long per = stateChunk();
    TreeSet<String> afresh = new TreeSet<>();
    long oldest = Long.MAX_VALUE;
    long newest = Long.MIN_VALUE;
    java.util.Set<String> stateless = stateless(copy.createRequest(shard));
    for (Placement.Slice slice : copy.slicesOn(shard)) {
      LastCopy.State state = copy.stateOf(slice);
      if (stateless.contains(slice.name())) {
        continue;
      }
      if (state == null) {
        afresh.add(slice.name());
        continue;
      }
      for (long at = 0; at < slice.length(); at += per) {
        int n = (int) Math.min(per, slice.length() - at);
        OptimizerState.Builder part = OptimizerState.newBuilder().setName(slice.name()).setOffset(slice.offset() + at)
            .setCount(n).setSteps(state.steps());
        for (float[] array : state.arrays()) {
          part.addStates(io.sparkps.ps.wire.PackedArrays.ofFloats(java.util.Arrays.copyOfRange(array, (int) at,
              (int) at + n)));
        }
        OptimizerState request = part.build();
        Calls.some(shards, List.of(shard), "restore the optimizer state of '" + slice.name() + "' on the replacement",
            s -> s.restoreOptimizerState(request), callTimeout, this);
      }
      oldest = Math.min(oldest, state.step());
      newest = Math.max(newest, state.step());
    }
    if (oldest == Long.MAX_VALUE) {
      return afresh.isEmpty() ? "" : "; optimizer state started afresh";
    }
    return "; optimizer state of " + (oldest == newest ? "step " + oldest : "steps " + oldest + "-" + newest)
        + (afresh.isEmpty() ? "" : ", started afresh for " + afresh);
  }

  /**
   * Sets the rows of the copy's tables that {@code shard} holds to the values the copy's worker last
   * pulled: fresher than a checkpoint's (they are of its last step); returns what was done, for the
   * supervisor ("" when there are none).
   */
  private String refillRows(int shard, LastCopy copy) {
    StringBuilder done = new StringBuilder();
    List<ShardStub> shards = connections.stubs();
    for (Map.Entry<String, LastCopy.Rows> e : new java.util.TreeMap<>(copy.rows()).entrySet()) {
      LastCopy.Rows rows = e.getValue().on(shard, shards.size());
      if (rows.ids().length == 0 || !copy.tables().containsKey(e.getKey())) {
        continue;
      }
      io.sparkps.ps.grpc.proto.EmbeddingPushRequest request = io.sparkps.ps.grpc.proto.EmbeddingPushRequest.newBuilder()
          .setTable(e.getKey()).setStep(rows.step()).setWorker(worker).setAssign(true)
          .setIds(io.sparkps.ps.wire.PackedArrays.ofLongs(rows.ids()))
          .setGradients(io.sparkps.ps.wire.PackedArrays.ofFloats(rows.values())).build();
      Calls.some(shards, List.of(shard), "refill the rows of embedding table '" + e.getKey() + "' on the replacement",
          s -> s.pushEmbeddings(io.sparkps.ps.grpc.proto.EmbeddingPushBatch.newBuilder().addTables(request).build()), callTimeout, this);
      done.append("; ").append(rows.ids().length).append(" rows of '").append(e.getKey()).append("' from worker ")
          .append(copy.worker()).append("'s pull of step ").append(rows.step());
    }
    return done.toString();
  }

  /**
   * Recreates this client's embedding tables on the replacement of {@code shard} and restores its
   * share of their rows from the newest checkpoint (when none of them holds a row yet: the first
   * refill wins, and a later one is told what it put in place); returns what was done, for the
   * supervisor ("" when there are no tables).
   */
  private String refillTables(int shard, long step, Map<String, EmbeddingSpec> tables, TableRefill refill) {
    if (tables.isEmpty()) {
      return "";
    }
    List<ShardStub> shards = connections.stubs();
    for (EmbeddingSpec spec : tables.values()) {
      Calls.some(shards, List.of(shard), "recreate embedding table '" + spec.name() + "' on the replacement",
          s -> s.createEmbedding(ProtoConvert.toProto(spec)), callTimeout, this);
    }
    TableRefill.Checkpoint from = refill == null ? null : refill.latest();
    if (from == null) {
      LOG.warn("SparkPS worker {}: ps {}'s share of the embedding tables {} is lost: no checkpoint to refill it from "
          + "(set a checkpoint directory)", worker, shard, tables.keySet());
      return "; embedding tables " + tables.keySet() + " empty again: no checkpoint (their rows on it are lost, "
          + "but for those the refilling worker last pulled)";
    }
    io.sparkps.ps.grpc.proto.SnapshotRequest request = io.sparkps.ps.grpc.proto.SnapshotRequest.newBuilder()
        .setPath(from.dir()).setTablesOnly(true).build();
    Duration bound = callTimeout.multipliedBy(4);
    io.sparkps.ps.grpc.proto.SnapshotReply reply = Calls.some(shards, List.of(shard),
        "refill the replacement's embedding tables from " + from.dir(), s -> s.restore(request, bound), bound, this)
        .get(0);
    if (reply.getTables() == 0) {
      return "; embedding tables refilled by another worker";
    }
    LOG.info("SparkPS worker {}: refilled ps {}'s {} embedding rows from the checkpoint of step {} ({})", worker, shard,
        reply.getTableRows(), from.step(), from.dir());
    return "; embedding tables " + tables.keySet() + " from the checkpoint of step " + from.step() + " ("
        + reply.getTableRows() + " rows with the default ones; their updates on it after step " + from.step()
        + ", up to step " + step
        + ", are lost)";
  }
}
