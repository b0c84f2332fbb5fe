package io.sparkps.ps;

import io.sparkps.ps.grpc.Connections;
import io.sparkps.ps.grpc.ShardStub;
import io.sparkps.ps.grpc.proto.CreateRequest;
import io.sparkps.ps.grpc.proto.FrameHeader;
import io.sparkps.ps.grpc.proto.UpdateOp;
import io.sparkps.ps.grpc.proto.UpdateReply;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.nd4j.linalg.api.ndarray.INDArray;

/**
 * A client's side of surviving a lost shard (see {@link ShardRecovery}): when a call to a shard
 * fails as unreachable or timed out, asks whether the shard was replaced, points the client at
 * the replacement, and refills it before the call's part is repeated.
 *
 * <p>The refill recreates the shard's groups and slices (idempotent) and sends one RESTORE of all
 * its slices (the first client's wins): values from this client's last {@code pullInto}, which
 * for a training worker are the parameters it computes with; variables it has no copy of take
 * their initializers. The restoring worker's next step becomes the SYNC version, so a step whose
 * sums died with the old shard is skipped there, not waited for.
 */
final class Recovery implements Calls.Recoverer {
  private final ShardRecovery hook;
  private final Connections connections;
  private final VariableCatalog catalog;
  private final int worker;
  private final int chunkBytes;
  private final Duration callTimeout;
  private final Object[] locks;
  private volatile Transfers transfers;
  private volatile Map<String, INDArray> lastPulled;
  private volatile long lastPullVersion;
  private volatile long lastPullStep;

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

  /** Remembers the arrays of a completed pull as this client's copy of those variables. */
  void recordPull(Map<String, INDArray> destinations, long step, long minVersion) {
    if (hook != null) {
      lastPulled = Map.copyOf(destinations);
      lastPullStep = step;
      lastPullVersion = minVersion;
    }
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
      connections.replace(shard, next);
      refill(shard);
    }
    return true;
  }

  private static boolean mayBeLost(RuntimeException failure) {
    // Unreachable, timed out, or a transport failure ("channel closed", a reset stream): the
    // supervisor knows whether the shard still serves, and says so at once if it does.
    return failure instanceof PsException && !(failure instanceof PsAuthenticationException);
  }

  private void refill(int shard) {
    CreateRequest create = catalog.createRequest(shard);
    List<ShardStub> shards = connections.stubs();
    Calls.some(shards, List.of(shard), "recreate the variables on the replacement", s -> s.create(create), callTimeout,
        this);
    if (!hook.refills()) {
      List<String> names = catalog.slicesOn(shard).stream().map(Placement.Slice::name).distinct().toList();
      Calls.some(shards, List.of(shard), "await the refill of the replacement",
          s -> s.awaitInitialized(names, hook.refillWait()), hook.refillWait().plus(callTimeout), this);
      return;
    }
    Map<String, INDArray> copy = lastPulled;
    long step = transfers.step();
    List<TensorCodec.Piece> pieces = new ArrayList<>();
    TreeSet<String> copied = new TreeSet<>();
    TreeSet<String> initialized = new TreeSet<>();
    ByteBuffer none = ByteBuffer.allocate(0);
    for (Placement.Slice slice : catalog.slicesOn(shard)) {
      INDArray values = copy == null ? null : copy.get(slice.name());
      if (values == null) {
        values = catalog.specs().get(slice.name()).initializer().values();
      } else {
        copied.add(slice.name());
      }
      if (!copied.contains(slice.name())) {
        initialized.add(slice.name());
      }
      ByteBuffer bytes = values == null ? none
          : TensorCodec.range(TensorCodec.bytes(TensorCodec.dense(values)), slice.offset(), slice.length());
      pieces.add(new TensorCodec.Piece(slice.name(), slice.offset(), List.of(), bytes));
    }
    if (pieces.isEmpty()) {
      return;
    }
    FrameHeader header = FrameHeader.newBuilder().setOp(UpdateOp.RESTORE).setWorker(worker).setStep(step + 1).build();
    UpdateReply reply = Calls.some(shards, List.of(shard), "refill the replacement",
        s -> s.update(TensorCodec.frames(header, pieces, chunkBytes, lastPullVersion)), callTimeout, this).get(0);
    if (reply.getInitializedCount() > 0) {
      String source = (copied.isEmpty() ? "" : "worker " + worker + "'s copy of step " + lastPullStep + " " + copied)
          + (copied.isEmpty() || initialized.isEmpty() ? "" : ", ")
          + (initialized.isEmpty() ? "" : "the initializers " + initialized);
      hook.restored(shard, step, source);
    }
  }
}
