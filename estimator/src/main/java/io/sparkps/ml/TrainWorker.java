package io.sparkps.ml;

import io.sparkps.ml.data.LabelKind;
import io.sparkps.ml.data.Minibatches;
import io.sparkps.ml.data.Prefetched;
import io.sparkps.ps.Consistency;
import io.sparkps.ps.ConsistencyGroup;
import io.sparkps.ps.PsClient;
import io.sparkps.spark.WorkerContext;
import io.sparkps.spark.WorkerFunction;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.sql.Row;
import org.nd4j.linalg.dataset.DataSet;
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
final class TrainWorker implements WorkerFunction<Row, float[]> {
  private static final long serialVersionUID = 1L;
  private final String networkJson;
  private final TrainingConfig config;
  private final LabelKind labelKind;
  private final int stepsPerEpoch;
  private final Minibatches.Limits limits;
  private final int inputs;
  private final int outputs;
  private final boolean reuseForwardPass;
  /** {@code auto}, {@code true} or {@code false}: see {@link #overlaps}. */
  private final String overlapTransfers;
  /** An embedding model's inputs (rows are the label, then these columns), or null for a dense network. */
  private final io.sparkps.ml.embedding.EmbeddingInputs embeddings;
  /** Whether the checkpoint directory is the fit's own (deleted at its end): the last save is then made only when due. */
  private final boolean ownCheckpoints;
  /** Longest the wait for one minibatch may take (read from memory or a local spill file). */
  private static final Duration BATCH_TIMEOUT = Duration.ofMinutes(10);
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
   * A worker for a network of {@code inputs} features and {@code outputs} outputs, whose dense
   * layers reuse the forward pass in the backward pass if {@code reuseForwardPass} ({@link ForwardReuse}),
   * whose transfers overlap the passes as {@code overlapTransfers} says ({@link #overlaps}), for an
   * embedding model of {@code embeddings} when not null.
   */
  TrainWorker(String networkJson, TrainingConfig config, LabelKind labelKind, int stepsPerEpoch, Minibatches.Limits limits,
      int inputs, int outputs, boolean reuseForwardPass, String overlapTransfers,
      io.sparkps.ml.embedding.EmbeddingInputs embeddings, boolean ownCheckpoints) {
    this.ownCheckpoints = ownCheckpoints;
    this.overlapTransfers = overlapTransfers;
    this.embeddings = embeddings;
    this.networkJson = networkJson;
    this.config = config;
    this.reuseForwardPass = reuseForwardPass;
    this.inputs = inputs;
    this.outputs = outputs;
    this.limits = limits;
    this.labelKind = labelKind;
    this.stepsPerEpoch = stepsPerEpoch;
  }

  /** Steps each worker runs in all: maxSteps when set, else epochs over its partition. */
  long totalSteps() {
    return config.maxSteps() > 0 ? config.maxSteps() : (long) config.epochs() * stepsPerEpoch;
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
    if (embeddings != null) {
      try {
        return trainEmbeddings(ctx, start, starter.getName());
      } finally {
        stop(start, starter);
      }
    }
    // Read once into memory or a spill file that is deleted when the task ends, however it ends.
    try (Minibatches data = Minibatches.of(ctx.data(), ctx.index(), config.featuresCol(), config.labelCol(),
        inputs, labelKind, outputs, limits, DataConf.spillDir(ctx.index()))) {
      if (data.spillFile() != null) {
        ctx.progress().message("worker " + ctx.index() + " spilled its " + data.rows() + " rows to " + data.spillFile());
      }
      Start s = await(start, starter.getName());
      return train(ctx, s.net(), s.variables(), ctx.ps(), data, s.done());
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
      net.reuseForwardPass(embeddings != null); // an embedding model needs the input's gradient
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

  private float[] train(WorkerContext<Row> ctx, Net net, NetworkVariables variables, PsClient ps, Minibatches data,
      long done) {
    try (PsTrainingStep step = new PsTrainingStep(net, variables, ps, config.workerUpdates())) {
      if (overlaps(overlapTransfers, ctx.host(), ctx.psAddresses()) && config.gradientAccumulation() == 1
          && !step.overlapTransfers("worker-" + ctx.index())) {
        LOG.info("SparkPS worker {}: transfers go between the passes (a layer of the network cannot be hooked)",
            ctx.index());
      }
      return train(ctx, net, variables, ps, data, done, step);
    }
  }

  private float[] train(WorkerContext<Row> ctx, Net net, NetworkVariables variables, PsClient ps, Minibatches data,
      long done, PsTrainingStep step) {
    StepMetrics metrics = new StepMetrics(ps);
    SaveClock clock = new SaveClock(System::nanoTime);
    SaveClock copies = stateCopies(net);
    long total = totalSteps();
    int perStep = config.gradientAccumulation();
    while (done < total) {
      int epoch = (int) (done / stepsPerEpoch);
      // The next minibatch is built while a step waits for the servers, at its pull (closed
      // before the next epoch starts, which ends this one's batches), into the arrays of the batch
      // before last, whose step has ended: a step holds one batch and the prefetch makes one more.
      try (Prefetched<DataSet> batches = new Prefetched<>(data.epoch(epoch, (int) (done % stepsPerEpoch),
          stepsPerEpoch, config.batchSize(), config.seed() + ctx.index(), true),
          "sparkps-minibatches-worker-" + ctx.index(), BATCH_TIMEOUT)) {
        while (done < total && batches.hasNext()) {
          // With gradient accumulation, minibatches [first, first + of) make one step (fewer at the end).
          int position = (int) (done % perStep);
          long first = done - position;
          int of = (int) Math.min(perStep, total - first);
          long waitStart = System.nanoTime();
          DataSet batch = batches.next();
          double waitMillis = (System.nanoTime() - waitStart) / 1e6;
          if (position == 0 && done + 1 < total) {
            batches.prefetch();
          }
          double loss = step.step(batch, done, epoch, position, of);
          done++;
          afterStep(ctx, ps, done, variables, metrics.of(loss, epoch, step, waitMillis, -1, Map.of()), clock, copies);
        }
      }
    }
    if (!finish(ctx, ps, done, variables, clock) || !config.workerUpdates()) {
      return null; // the driver reads the parameters from the shards (Dl4jTrainer.finalParameters)
    }
    // With worker-side updates the chief's network holds what it pulled less its own unsent updates.
    step.pull();
    return net.params().toFloatVector();
  }

  /**
   * Whether a worker's transfers overlap its passes ({@link OverlappedTransfers}): {@code true},
   * {@code false}, or {@code auto}, when a ps serves on another host than the worker's
   * ({@code psAddresses} as host:port; an in-process one is on the worker's): there the transfers wait on the network, while to the worker's
   * own host they are copies that take the cores the passes need.
   */
  static boolean overlaps(String setting, String host, List<String> psAddresses) {
    return switch (setting) {
      case "true" -> true;
      case "false" -> false;
      default -> psAddresses.stream().anyMatch(a -> !a.startsWith("inprocess:")
          && !a.substring(0, Math.max(0, a.lastIndexOf(':'))).equals(host));
    };
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
   * from it, and a short run would otherwise pay a save). Whether this is the chief.
   */
  private boolean finish(WorkerContext<Row> ctx, PsClient ps, long done, NetworkVariables variables, SaveClock clock) {
    ctx.barrier(); // every worker's last push is in
    boolean due = !ownCheckpoints || config.checkpointInterval() > 0 || clock.isDue();
    if (ctx.isChief() && config.checkpointDir() != null && due) {
      checkpoint(ctx, ps, done, variables);
    }
    return ctx.isChief();
  }

  /**
   * An embedding model's training: the partition read into categorical rows (in memory) while the
   * network and its variables are made ready, then each step pulls the minibatch's table rows.
   */
  private float[] trainEmbeddings(WorkerContext<Row> ctx, FutureTask<Start> start, String thread) {
    io.sparkps.ml.embedding.CategoricalRows data = EmbeddingStep.read(ctx.data(), embeddings,
        labelKind != LabelKind.VALUES, outputs, ctx.index());
    Start s = await(start, thread);
    PsClient ps = ctx.ps();
    io.sparkps.ml.embedding.TableLookup lookup = new io.sparkps.ml.embedding.TableLookup(embeddings, ps,
        config.tablesGroup(ctx.numWorkers()));
    String checkpoints = config.checkpointDir();
    if (checkpoints != null) {
      // No worker holds a copy of a table: a replaced ps gets its rows back from the newest checkpoint.
      ps.setTableRefill(() -> Checkpoints.latest(checkpoints)
          .map(m -> new io.sparkps.ps.TableRefill.Checkpoint(m.path(), m.step())).orElse(null));
    }
    EmbeddingStep step = new EmbeddingStep(new PsTrainingStep(s.net(), s.variables(), ps), lookup, data,
        s.net().miniBatch());
    long done = s.done();
    long total = totalSteps();
    StepMetrics metrics = new StepMetrics(ps);
    SaveClock clock = new SaveClock(System::nanoTime);
    SaveClock copies = stateCopies(s.net());
    while (done < total) {
      int epoch = (int) (done / stepsPerEpoch);
      java.util.Iterator<int[]> batches = data.epoch(epoch, (int) (done % stepsPerEpoch), stepsPerEpoch,
          config.batchSize(), config.seed() + ctx.index());
      while (done < total && batches.hasNext()) {
        double loss = step.step(batches.next(), done, epoch);
        done++;
        // tableBytes, tableKeys: the table pulls' and pushes' payload bytes and the unique keys pulled, so far
        afterStep(ctx, ps, done, s.variables(), metrics.of(loss, epoch, step.dense(), 0, step.tableMillis(),
            Map.of("tableBytes", (double) ps.tableBytes(), "tableKeys", (double) step.keysPulled())), clock, copies);
      }
    }
    finish(ctx, ps, done, s.variables(), clock);
    return null; // the driver reads the parameters and exports the tables (Dl4jTrainer.finalParameters)
  }

  /**
   * Saves the checkpoint of {@code step}. A storage error (a full disk, a permission, a ps lost
   * during the save) is retried, then reported, naming the checkpoint skipped: training goes on,
   * and the next checkpoint is tried as usual. (Only the chief saves; other workers never wait for it.)
   */
  private void checkpoint(WorkerContext<Row> ctx, PsClient ps, long step, NetworkVariables variables) {
    RuntimeException last = null;
    for (int attempt = 1; attempt <= SAVE_ATTEMPTS; attempt++) {
      try {
        long start = System.nanoTime();
        Checkpoints.save(ps, config.checkpointDir(), step, variables, config.checkpointsKept(),
            config.gradientAccumulation());
        LOG.info("SparkPS chief: saved the checkpoint of step {} in {} ({} ms){}", step, config.checkpointDir(),
            (System.nanoTime() - start) / 1_000_000, attempt > 1 ? " (attempt " + attempt + ")" : "");
        return;
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
  }
}
