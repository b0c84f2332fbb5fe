package io.sparkps.ml.checkpoint;

import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.PsTimeoutException;
import io.sparkps.ps.spec.VariableInfo;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The chief's decision, as a worker starts, on what the parameter servers hold: fresh servers are
 * initialized (or restored from the latest checkpoint); servers that hold the run's state keep it
 * (a retried stage); servers of which only some lost their state (a ps replaced and not refilled,
 * e.g. when the executor holding it and a worker died together) are never filled from fresh
 * values beside trained ones: the copies the previous attempt's workers left on their executors
 * are asked to refill them and awaited, else the whole run rolls back to its latest checkpoint,
 * else the run fails, naming the lost shards and the fix. When every shard was lost at a retried
 * stage, the kept copies are asked first too, before the checkpoint or the initializers.
 */
public final class ServerState {
  private ServerState() {}

  /**
   * Makes {@code variables} ready on the servers for the chief; returns what the chief did, for its
   * progress message, or null when it kept what the servers hold.
   */
  public static String prepare(PsClient ps, NetworkVariables variables, String checkpoints, int gradientAccumulation,
      Duration refillGrace) {
    Set<String> names = Set.copyOf(variables.names());
    List<VariableInfo> slices = ps.listVariables().stream().filter(v -> names.contains(v.name())).toList();
    TreeSet<String> missing = new TreeSet<>();
    TreeSet<Integer> lostShards = new TreeSet<>();
    boolean trained = false;
    for (VariableInfo v : slices) {
      if (!v.initialized()) {
        missing.add(v.name());
        lostShards.add(v.shard());
      } else if (v.version() > 0) {
        trained = true;
      }
    }
    if (missing.isEmpty()) {
      return null; // a retried stage: the servers keep the run's state
    }
    boolean fresh = slices.stream().noneMatch(VariableInfo::initialized);
    if (fresh && ps.requestRefill(lostShards)) {
      // A retried stage whose every shard was lost: the previous attempt's workers kept copies.
      try {
        ps.awaitInitialized(missing, refillGrace);
        return "every ps had lost its state: refilled ps " + lostShards + " from the copies the workers of the "
            + "previous attempt kept";
      } catch (PsTimeoutException noCopy) {
        if (ps.listVariables().stream().anyMatch(v -> names.contains(v.name()) && v.initialized())) {
          // Some shards were refilled, not all: never fresh values beside them.
          return rollBack(ps, variables, checkpoints, gradientAccumulation, lostShards, missing, noCopy);
        }
      }
    }
    if (fresh || !trained) {
      // Nothing was trained on what the servers hold: fill what is missing (initialized slices stay).
      return fresh ? freshStart(ps, variables, checkpoints, gradientAccumulation) : initialized(ps, lostShards);
    }
    try {
      // The executors of the previous attempt's workers keep their copies: one of them refills the
      // replaced shards (a worker of that attempt may still be refilling them, too).
      ps.requestRefill(lostShards);
      ps.awaitInitialized(missing, refillGrace);
      return null;
    } catch (PsTimeoutException noRefill) {
      return rollBack(ps, variables, checkpoints, gradientAccumulation, lostShards, missing, noRefill);
    }
  }

  /**
   * Fresh servers: a new run, a resumed one, or one whose every shard was lost (with the workers
   * that held copies). The latest checkpoint is restored, else the variables are initialized; a
   * loss awaiting its refill is told what refilled it (nothing is told when no shard was lost).
   */
  private static String freshStart(PsClient ps, NetworkVariables variables, String checkpoints,
      int gradientAccumulation) {
    Checkpoints.Restored restored = checkpoints == null ? null
        : Checkpoints.restore(ps, checkpoints, variables, gradientAccumulation).orElse(null);
    if (restored == null) {
      ps.initializeAll();
      for (int shard = 0; shard < ps.numShards(); shard++) {
        ps.reportRefill(shard, 0, "the initializers: every shard was lost with no copy left and no checkpoint, so "
            + "training started over");
      }
      return null;
    }
    long step = restored.marker().step();
    for (int shard = 0; shard < ps.numShards(); shard++) {
      ps.reportRefill(shard, step, "the checkpoint of step " + step + " in " + restored.marker().path()
          + " (every shard was lost; all restored from it)");
    }
    return "resumed from the checkpoint of step " + step + " in " + restored.marker().path()
        + (restored.skipped().isEmpty() ? "" : "; newer ones were damaged: " + restored.skipped());
  }

  private static String initialized(PsClient ps, Set<Integer> lostShards) {
    ps.initializeAll();
    return "initialized the variables of ps " + lostShards + ", replaced before any training step";
  }

  private static String rollBack(PsClient ps, NetworkVariables variables, String checkpoints, int gradientAccumulation,
      Set<Integer> lostShards, Set<String> missing, PsTimeoutException noRefill) {
    Checkpoints.Restored restored = checkpoints == null ? null
        : Checkpoints.restore(ps, checkpoints, variables, gradientAccumulation).orElse(null);
    if (restored == null) {
      throw new IllegalStateException("the state of ps " + lostShards + " (variables " + missing + ") was lost with "
          + "its task, and no worker holding a copy refilled its replacement (the workers that trained on it were "
          + "lost too) and there is no checkpoint to roll back to" + (checkpoints == null ? ""
              : " in " + checkpoints) + ". The other shards hold trained values that cannot be combined with fresh "
          + "ones: set checkpointDir (--checkpoint-dir) so that such a loss rolls the run back to its latest "
          + "checkpoint", noRefill);
    }
    long step = restored.marker().step();
    String source = "the checkpoint of step " + step + " in " + restored.marker().path()
        + " (no worker's copy survived; every shard rolled back to it)";
    lostShards.forEach(shard -> ps.reportRefill(shard, step, source));
    return "ps " + lostShards + " lost its state with no copy left: rolled every shard back to " + source;
  }
}
