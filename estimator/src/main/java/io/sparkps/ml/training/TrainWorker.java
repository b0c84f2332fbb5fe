package io.sparkps.ml.training;

import io.sparkps.ml.checkpoint.Checkpoints;
import io.sparkps.ml.checkpoint.SaveClock;
import io.sparkps.ml.checkpoint.ServerState;
import io.sparkps.ml.data.Prefetched;
import io.sparkps.ml.network.BlasKernels;
import io.sparkps.ml.network.BlasThreads;
import io.sparkps.ml.network.ForwardReuse;
import io.sparkps.ml.network.Net;
import io.sparkps.ml.network.NetworkVariables;
import io.sparkps.ml.param.TrainingConfig;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.spec.Consistency;
import io.sparkps.ps.spec.ConsistencyGroup;
import io.sparkps.spark.WorkerContext;
import io.sparkps.spark.WorkerFunction;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.sql.Row;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker of {@link Dl4jTrainer}: builds the network, declares its variables (the chief
 * initializes them from its freshly initialized network, or restores the latest checkpoint; a
 * retried stage keeps the servers' state), and runs the remaining steps, the same number as every
 * other worker, so SYNC steps always complete. The chief saves checkpoints once every worker is
 * done; the driver then reads the final parameters from the shards (with worker-side updates, the
 * chief returns what its network holds).
 */
public final class TrainWorker implements WorkerFunction<Row, float[]> {
  private static final long serialVersionUID = 1L;
  private final String networkJson;
  private final TrainingConfig config;
  private final ModelInputs model;
  private final ModelInputs.WorkerPlan plan;
  private final boolean reuseForwardPass;
  /** Whether the checkpoint directory is the fit's own (deleted at its end): the last save is then made only when due. */
  private final boolean ownCheckpoints;
  /** Longest a worker waits for the chief to initialize the variables or restore them. */
  private static final Duration INIT_TIMEOUT = Duration.ofMinutes(5);
  /**
   * Longest the chief of a retried stage waits for a worker of the failed attempt to refill a
   * replaced ps before it rolls the run back to its latest checkpoint.
   */
  private static final Duration REFILL_GRACE = Duration.ofSeconds(15);
  /** Longest the start (network, variables, the wait for the chief) may take once the partition is read. */
  private static final Duration START_TIMEOUT = INIT_TIMEOUT.plusMinutes(5);
  /** Attempts at saving one checkpoint before it is skipped, and the wait before the second (longer after). */
  private static final int SAVE_ATTEMPTS = 3;
  private static final Duration SAVE_BACKOFF = Duration.ofSeconds(1);
  private static final Logger LOG = LoggerFactory.getLogger(TrainWorker.class);
  /** Longest a start thread left running by a failed read is waited for once interrupted. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

  /**
   * A worker of the network {@code networkJson} that trains on {@code model}'s inputs as
   * {@code plan} says, whose layers reuse the forward pass in the backward pass if
   * {@code reuseForwardPass} ({@link io.sparkps.ml.network.ForwardReuse}).
   */
  TrainWorker(String networkJson, ModelInputs model, ModelInputs.WorkerPlan plan, boolean reuseForwardPass,
      boolean ownCheckpoints) {
    this.networkJson = networkJson;
    this.model = model;
    this.plan = plan;
    this.config = plan.config();
    this.reuseForwardPass = reuseForwardPass;
    this.ownCheckpoints = ownCheckpoints;
  }

  /** Steps each worker runs in all: maxSteps when set, else epochs over its partition. */
  long totalSteps() {
    return config.maxSteps() > 0 ? config.maxSteps() : (long) config.epochs() * plan.stepsPerEpoch();
  }

  /** What a worker trains from: its network, the variables it declared, the minibatches done already. */
  private record Start(Net net, NetworkVariables variables, long done) {}

  @Override
  public float[] run(WorkerContext<Row> ctx) {
    // The network is built and the variables made ready on the servers on a thread of its own while
    // this one reads the partition: the servers' round trips and the wait for the chief overlap the read.
    FutureTask<Start> start = new FutureTask<>(() -> start(ctx));
    Thread starter = new Thread(start, "sparkps-start-worker-" + ctx.index());
    starter.setDaemon(true);
    starter.start();
    BlasKernels.advice().ifPresent(advice -> {
      LOG.warn("worker {} on {}: {}", ctx.index(), ctx.host(), advice);
      ctx.progress().message("worker " + ctx.index() + " on " + ctx.host() + ": " + advice);
    });
    BlasThreads.fitToThisTask(true).ifPresent(line -> LOG.info("worker {} on {}: {}", ctx.index(), ctx.host(), line));
    try (ModelInputs.WorkerData data = model.read(ctx, plan)) {
      Start s = await(start, starter.getName());
      try (ModelInputs.Steps steps = data.steps(ctx, s.net(), s.variables(), plan)) {
        return train(ctx, s, steps);
      }
    } finally {
      stop(start, starter);
    }
  }

  /**
   * Builds the network and declares its variables (the chief initializes them or restores the
   * latest checkpoint; the others wait for it), and finds where a resumed or retried run continues.
   */
  private Start start(WorkerContext<Row> ctx) {
    Net net = Net.fromJson(networkJson);
    if (reuseForwardPass) {
      net.reuseForwardPass(model.needsInputGradient());
    }
    ConsistencyGroup group = config.group(ctx.numWorkers());
    NetworkVariables variables = NetworkVariables.of(net, group.name(), config.workerUpdates());
    PsClient ps = ctx.ps();
    ps.createGroup(group);
    ps.create(variables.specs());
    if (ctx.isChief()) {
      String done = ServerState.prepare(ps, variables, config.checkpointDir(), config.gradientAccumulation(),
          REFILL_GRACE);
      if (done != null) {
        LOG.info("SparkPS chief: {}", done);
        ctx.progress().message(done);
      }
    } else {
      ps.awaitInitialized(variables.names(), INIT_TIMEOUT);
    }
    // A resumed or retried run continues from the servers' state: SYNC steps count from their
    // version; ASYNC and SSP versions count every worker's pushes.
    long version = ps.read(variables.names().get(0)).version();
    ps.setStep(version);
    long pushes = config.consistency() == Consistency.SYNC ? version : version / ctx.numWorkers();
    return new Start(net, variables, Math.min(totalSteps(), pushes * config.gradientAccumulation()));
  }

  private static Start await(FutureTask<Start> start, String thread) {
    try {
      return start.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw Prefetched.failure(e, thread);
    } catch (TimeoutException e) {
      throw new IllegalStateException(thread + " did not build the network and make its variables ready on the "
          + "parameter servers within " + START_TIMEOUT.toMinutes() + " minutes (a ps that does not answer?)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for " + thread, e);
    }
  }

  /** Ends the start thread if it still runs (the read failed first): interrupted, waited for briefly. */
  private static void stop(FutureTask<Start> start, Thread starter) {
    if (start.isDone()) {
      return;
    }
    start.cancel(true);
    try {
      starter.join(STOP_TIMEOUT.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Runs the steps from where a resumed or retried run continues to the end, each followed by its
   * report (and on the chief, a checkpoint when due), then waits for every worker's last push.
   */
  private float[] train(WorkerContext<Row> ctx, Start s, ModelInputs.Steps steps) {
    PsClient ps = ctx.ps();
    SaveClock clock = new SaveClock(System::nanoTime);
    SaveClock copies = stateCopies(s.net());
    long done = s.done();
    long total = totalSteps();
    int stepsPerEpoch = plan.stepsPerEpoch();
    while (done < total) {
      int epoch = (int) (done / stepsPerEpoch);
      try (ModelInputs.Epoch batches = steps.epoch(epoch, (int) (done % stepsPerEpoch))) {
        while (done < total && batches.hasNext()) {
          Map<String, Double> metrics = batches.next(done, total);
          done++;
          afterStep(ctx, ps, done, s.variables(), metrics, clock, copies);
        }
      }
    }
    boolean saved = finish(ctx, ps, done, s.variables(), clock);
    return ctx.isChief() ? steps.result(saved) : null;
  }

  /**
   * On the chief at the first step boundary at or after each interval (or when {@code clock} says,
   * with the automatic interval), checkpoints; then reports step {@code done}'s progress, with what
   * the save took as {@code checkpointMs} when there was one (the run's record then says what
   * checkpoints cost). When {@code copies} says, copies the optimizer state beside this worker's
   * copy of the values, so that a ps refilled from its copy goes on with its moments (what that
   * took reported as {@code stateCopyMs}).
   */
  private void afterStep(WorkerContext<Row> ctx, PsClient ps, long done, NetworkVariables variables,
      Map<String, Double> metrics, SaveClock clock, SaveClock copies) {
    if (copies != null && copies.isDue()) {
      long start = System.nanoTime();
      long bytes = ps.copyOptimizerState();
      long took = System.nanoTime() - start;
      if (!copies.hasSaved()) {
        LOG.info("SparkPS worker {}: its first copy of the optimizer state ({} KiB) took {} ms; the next come at "
            + "least {} s and {} times that apart", ctx.index(), bytes >> 10, took / 1_000_000,
            SaveClock.STATE_COPY_SPACING.toSeconds(), SaveClock.COST_FACTOR);
      }
      copies.saved(took);
      metrics = new java.util.HashMap<>(metrics);
      metrics.put("stateCopyMs", took / 1e6);
    }
    int perStep = config.gradientAccumulation();
    boolean mayCheckpoint = ctx.isChief() && config.checkpointDir() != null && done % perStep == 0
        && done < totalSteps();
    if (mayCheckpoint && (config.checkpointInterval() > 0 ? done % config.checkpointInterval() < perStep
        : clock.isDue())) {
      long start = System.nanoTime();
      checkpoint(ctx, ps, done, variables);
      long took = System.nanoTime() - start;
      clock.saved(took);
      metrics = new java.util.HashMap<>(metrics);
      metrics.put("checkpointMs", took / 1e6);
    }
    ctx.progress().report(done, done * config.batchSize(), metrics);
  }

  /**
   * The clock of this worker's copies of the optimizer state, or null when they would not fit: the
   * copy (Adam: two arrays of the network's size, beside the values it keeps anyway) is kept only
   * while it stays under a quarter of this JVM's heap; without it a refilled ps starts afresh.
   */
  private static SaveClock stateCopies(Net net) {
    long bytes = 2L * Float.BYTES * net.params().length();
    if (bytes > Runtime.getRuntime().maxMemory() / 4) {
      LOG.info("SparkPS: no copies of the optimizer state ({} MiB) beside the kept values: a ps refilled from them "
          + "starts its optimizer afresh", bytes >> 20);
      return null;
    }
    return SaveClock.forStateCopies(System::nanoTime);
  }

  /**
   * Waits for every worker's last push; the chief saves the last checkpoint (in the fit's own
   * directory with the automatic interval, only when {@code clock} says it is due: nothing resumes
   * from it, and a short run would otherwise pay a save). Whether the last step's checkpoint was
   * saved.
   */
  private boolean finish(WorkerContext<Row> ctx, PsClient ps, long done, NetworkVariables variables, SaveClock clock) {
    ctx.barrier(); // every worker's last push is in
    boolean due = !ownCheckpoints || config.checkpointInterval() > 0 || clock.isDue();
    return ctx.isChief() && config.checkpointDir() != null && due && checkpoint(ctx, ps, done, variables);
  }

  /**
   * Saves the checkpoint of {@code step}; whether it was saved. A storage error (a full disk, a
   * permission, a ps lost during the save) is retried, then reported, naming the checkpoint
   * skipped: training goes on, and the next checkpoint is tried as usual. (Only the chief saves;
   * other workers never wait for it.)
   */
  private boolean checkpoint(WorkerContext<Row> ctx, PsClient ps, long step, NetworkVariables variables) {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= SAVE_ATTEMPTS; attempt++) {
      try {
        long start = System.nanoTime();
        Checkpoints.save(ps, config.checkpointDir(), step, variables, config.checkpointsKept(),
            config.gradientAccumulation());
        LOG.info("SparkPS chief: saved the checkpoint of step {} in {} ({} ms){}", step, config.checkpointDir(),
            (System.nanoTime() - start) / 1_000_000, attempt > 1 ? " (attempt " + attempt + ")" : "");
        return true;
      } catch (RuntimeException e) {
        if (Thread.currentThread().isInterrupted()) {
          throw e; // the task is being killed: no retry
        }
        last = e;
        try {
          Thread.sleep(SAVE_BACKOFF.toMillis() * attempt);
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
          throw e;
        }
      }
    }
    String skipped = "the checkpoint of step " + step + " in " + config.checkpointDir() + " was skipped after "
        + SAVE_ATTEMPTS + " attempts (" + last.getMessage() + "); training goes on, the next checkpoint is tried as usual";
    LOG.warn(skipped, last);
    ctx.progress().message(skipped);
    return false;
  }
}
