package io.sparkps.ps.server;

import io.sparkps.ps.grpc.proto.OptimizerState;
import io.sparkps.ps.grpc.proto.OptimizerStateRequest;
import io.sparkps.ps.grpc.proto.UpdateReply;
import io.sparkps.ps.annotation.Internal;
import io.sparkps.ps.wire.PackedArrays;
import io.sparkps.ps.wire.PsError;
import java.util.Arrays;

/**
 * Reads and restores the optimizer state of this shard's slices, a range of elements at a time.
 * A training worker reads it now and then beside its copy of the values; the worker that refills a
 * replacement from that copy restores it first, into slices not initialized yet, and the RESTORE of
 * their values then keeps it (see {@link VariableSlice#restoredStateSteps}) instead of starting
 * the state afresh. A restore into an initialized slice does nothing: the refill it belonged to
 * lost the race, or training goes on there already.
 */
@Internal
public final class OptimizerStates {
  private final ShardStore store;

  /** The optimizer states of {@code store}'s slices. */
  public OptimizerStates(ShardStore store) {
    this.store = store;
  }

  /** The state of the requested elements, which must lie in one initialized slice of this shard. */
  public OptimizerState read(OptimizerStateRequest request) {
    VariableSlice s = store.slice(request.getName());
    int at = check(s, request.getName(), request.getOffset(), request.getCount());
    int n = (int) request.getCount();
    OptimizerState.Builder out = OptimizerState.newBuilder().setName(s.name).setOffset(request.getOffset()).setCount(n);
    s.lock.lock();
    try {
      if (!s.initialized) {
        throw PsError.precondition("variable '" + s.name + "' on ps " + store.shardIndex
            + " is not initialized: it has no optimizer state to read yet");
      }
      out.setSteps(s.iteration - s.rule.stateSince());
      for (float[] state : s.rule.state()) {
        out.addStates(PackedArrays.ofFloats(Arrays.copyOfRange(state, at, at + n)));
      }
    } finally {
      s.lock.unlock();
    }
    return out.build();
  }

  /**
   * Sets the state of the given elements of a slice that is not initialized yet; the reply names
   * the variable when it did, and is empty when the slice was initialized already (nothing done).
   */
  public UpdateReply restore(OptimizerState state) {
    VariableSlice s = store.slice(state.getName());
    int at = check(s, state.getName(), state.getOffset(), state.getCount());
    int n = (int) state.getCount();
    float[][] rule = s.rule.state();
    String where = "variable '" + s.name + "' on ps " + store.shardIndex;
    if (state.getStatesCount() != rule.length) {
      throw PsError.invalid(where + ": " + state.getStatesCount() + " optimizer state arrays sent, its optimizer "
          + s.spec.getOptimizer().getKind() + " keeps " + rule.length + " (field states)");
    }
    if (state.getSteps() < 0) {
      throw PsError.invalid(where + ": steps " + state.getSteps() + " is negative (field steps)");
    }
    float[][] values = new float[rule.length][];
    for (int k = 0; k < rule.length; k++) {
      values[k] = PackedArrays.floats(state.getStates(k), "states");
      if (values[k].length != n) {
        throw PsError.invalid(where + ": optimizer state array " + k + " holds " + values[k].length
            + " floats, count says " + n + " (field states)");
      }
    }
    s.lock.lock();
    try {
      if (s.initialized) {
        return UpdateReply.getDefaultInstance();
      }
      for (int k = 0; k < rule.length; k++) {
        System.arraycopy(values[k], 0, rule[k], at, n);
      }
      s.restoredStateSteps = state.getSteps();
    } finally {
      s.lock.unlock();
    }
    return UpdateReply.newBuilder().addInitialized(s.name).build();
  }

  /** The index in slice {@code s} of element {@code offset}, once the range is checked to lie in it. */
  private int check(VariableSlice s, String name, long offset, long count) {
    if (count < 0 || offset < s.offset || count > s.offset + s.size - offset) {
      throw PsError.invalid("variable '" + name + "' on ps " + store.shardIndex + ": elements [" + offset + ", "
          + (offset + count) + ") are outside the slice [" + s.offset + ", " + (s.offset + s.size)
          + ") held here (fields offset, count)");
    }
    return (int) (offset - s.offset);
  }
}
